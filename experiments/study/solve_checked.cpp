#include "experiments/study/solve_checked.hpp"

#include "core/error.hpp"

namespace sinkgrad::study {

template <class Real>
void solve_checked(const BackwardSolver& solver, const BackwardProblem<Real>& problem,
                   const BackwardResult<Real>& result, Device device, const std::string& context) {
  try {
    solver.solve(problem, result, device);
  } catch (const Error& error) {
    if (context.empty()) throw;
    const std::string named = "solver '" + solver.name() + "'";
    std::string message = error.what();
    if (message.rfind(named, 0) == 0)
      message.insert(named.size(), " (" + context + ")");
    else
      message = named + " (" + context + ") failed: " + message;
    throw Error(message);
  }
}

template void solve_checked(const BackwardSolver&, const BackwardProblem<float>&,
                            const BackwardResult<float>&, Device, const std::string&);
template void solve_checked(const BackwardSolver&, const BackwardProblem<double>&,
                            const BackwardResult<double>&, Device, const std::string&);

}  // namespace sinkgrad::study
