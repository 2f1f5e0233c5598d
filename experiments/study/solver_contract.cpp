#include "experiments/study/solver_contract.hpp"

#include <cmath>
#include <exception>
#include <new>

#include "core/error.hpp"

namespace sinkgrad::study {
namespace {

std::string what_failed(const BackwardSolver& solver, const std::string& context) {
  return "solver '" + solver.name() + "'" + (context.empty() ? "" : " (" + context + ")");
}

}  // namespace

template <class Real>
index_t check_solver_output(const BackwardSolver& solver, const BackwardResult<Real>& result,
                            const std::string& context) {
  const BatchView<Real> gradient = result.grad_logits;
  if (gradient.space != MemorySpace::host || gradient.batch == 0) return 0;
  const auto entries = static_cast<index_t>(gradient.n) * gradient.n;
  index_t demoted = 0;
  for (index_t b = 0; b < gradient.batch; ++b) {
    const auto code = static_cast<std::int32_t>(result.status[b]);
    if (code < 0 || code >= status_count)
      throw Error(what_failed(solver, context) + " broke its output contract: matrix " +
                  std::to_string(b) + " has status code " + std::to_string(code) +
                  " (known codes are 0.." + std::to_string(status_count - 1) + ")");
    if (result.iterations[b] < 0)
      throw Error(what_failed(solver, context) + " broke its output contract: matrix " +
                  std::to_string(b) + " reports " + std::to_string(result.iterations[b]) +
                  " iterations (must be >= 0)");
    if (!is_success(result.status[b]) && result.status[b] != SolveStatus::not_converged) continue;
    const Real* values = gradient.data + b * entries;
    for (index_t k = 0; k < entries; ++k)
      if (!std::isfinite(values[k])) {
        result.status[b] = SolveStatus::breakdown;
        ++demoted;
        break;
      }
  }
  return demoted;
}

template <class Real>
void solve_checked(const BackwardSolver& solver, const BackwardProblem<Real>& problem,
                   const BackwardResult<Real>& result, Device device, const std::string& context) {
  try {
    solver.solve(problem, result, device);
  } catch (const std::bad_alloc&) {
    throw Error(what_failed(solver, context) + " failed: out of memory");
  } catch (const std::exception& error) {
    throw Error(what_failed(solver, context) + " failed: " + error.what());
  } catch (...) {
    throw Error(what_failed(solver, context) +
                " failed: it threw an exception that is not a std::exception");
  }
  check_solver_output(solver, result, context);
}

template void solve_checked(const BackwardSolver&, const BackwardProblem<float>&,
                            const BackwardResult<float>&, Device, const std::string&);
template void solve_checked(const BackwardSolver&, const BackwardProblem<double>&,
                            const BackwardResult<double>&, Device, const std::string&);
template index_t check_solver_output(const BackwardSolver&, const BackwardResult<float>&,
                                     const std::string&);
template index_t check_solver_output(const BackwardSolver&, const BackwardResult<double>&,
                                     const std::string&);

}  // namespace sinkgrad::study
