#include "core/solver_contract.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <new>

#include "core/backward_solver.hpp"
#include "core/error.hpp"

namespace sinkgrad {
namespace {

std::string what_failed(const BackwardSolver& solver) {
  return "solver '" + solver.name() + "'";
}

}  // namespace

void behind_exception_boundary(const BackwardSolver& solver, const std::function<void()>& solve) {
  try {
    solve();
  } catch (const std::bad_alloc&) {
    throw Error(what_failed(solver) + " failed: out of memory");
  } catch (const std::exception& error) {
    throw Error(what_failed(solver) + " failed: " + error.what());
  } catch (...) {
    throw Error(what_failed(solver) +
                " failed: it threw an exception that is not a std::exception");
  }
}

template <class Real>
void mark_not_written(const BackwardResult<Real>& result) {
  const BatchView<Real> gradient = result.grad_logits;
  if (gradient.space != MemorySpace::host || gradient.batch == 0) return;
  const index_t entries = gradient.batch * gradient.n * gradient.n;
  std::fill(gradient.data, gradient.data + entries, std::numeric_limits<Real>::quiet_NaN());
  std::fill(result.status, result.status + gradient.batch, static_cast<SolveStatus>(-1));
  std::fill(result.iterations, result.iterations + gradient.batch, -1);
}

std::string breach_message(const BackwardSolver& solver, index_t matrix, Breach breach,
                           std::int32_t status, std::int32_t iterations) {
  const std::string head = what_failed(solver) + " broke its output contract: ";
  const std::string which = "matrix " + std::to_string(matrix);
  switch (breach) {
    case Breach::status_not_written:
      return head + "it did not write the status of " + which;
    case Breach::unknown_status:
      return head + which + " has " +
             (status == not_known ? std::string("a status code")
                                  : "status code " + std::to_string(status)) +
             " outside the known codes 0.." + std::to_string(status_count - 1);
    case Breach::iterations_not_written:
      return head + "it did not write the iteration count of " + which;
    case Breach::negative_iterations:
      return head + which + " reports " +
             (iterations == not_known ? std::string("a negative number of")
                                      : std::to_string(iterations)) +
             " iterations (must be >= 0)";
    case Breach::none:
      break;
  }
  return head + which;
}

template <class Real>
index_t check_solver_output(const BackwardSolver& solver, const BackwardResult<Real>& result) {
  const BatchView<Real> gradient = result.grad_logits;
  if (gradient.space != MemorySpace::host || gradient.batch == 0) return 0;
  const auto entries = static_cast<index_t>(gradient.n) * gradient.n;
  index_t demoted = 0;
  for (index_t b = 0; b < gradient.batch; ++b) {
    const auto written = static_cast<std::int32_t>(result.status[b]);
    bool demoted_here = false;
    const Breach breach = check_matrix_output(result.status[b], result.iterations[b],
                                              gradient.data + b * entries, entries, demoted_here);
    if (breach != Breach::none)
      throw Error(breach_message(solver, b, breach, written, result.iterations[b]));
    demoted += demoted_here ? 1 : 0;
  }
  return demoted;
}

template void mark_not_written(const BackwardResult<float>&);
template void mark_not_written(const BackwardResult<double>&);
template index_t check_solver_output(const BackwardSolver&, const BackwardResult<float>&);
template index_t check_solver_output(const BackwardSolver&, const BackwardResult<double>&);

}  // namespace sinkgrad
