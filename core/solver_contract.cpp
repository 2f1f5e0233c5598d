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

template <class Real>
index_t check_solver_output(const BackwardSolver& solver, const BackwardResult<Real>& result) {
  const BatchView<Real> gradient = result.grad_logits;
  if (gradient.space != MemorySpace::host || gradient.batch == 0) return 0;
  const auto entries = static_cast<index_t>(gradient.n) * gradient.n;
  index_t demoted = 0;
  for (index_t b = 0; b < gradient.batch; ++b) {
    const auto code = static_cast<std::int32_t>(result.status[b]);
    if (code == -1)
      throw Error(what_failed(solver) + " broke its output contract: it did not write the " +
                  "status of matrix " + std::to_string(b));
    if (code < 0 || code >= status_count)
      throw Error(what_failed(solver) + " broke its output contract: matrix " + std::to_string(b) +
                  " has status code " + std::to_string(code) + " (known codes are 0.." +
                  std::to_string(status_count - 1) + ")");
    if (result.iterations[b] == -1)
      throw Error(what_failed(solver) + " broke its output contract: it did not write the " +
                  "iteration count of matrix " + std::to_string(b));
    if (result.iterations[b] < 0)
      throw Error(what_failed(solver) + " broke its output contract: matrix " + std::to_string(b) +
                  " reports " + std::to_string(result.iterations[b]) +
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

template void mark_not_written(const BackwardResult<float>&);
template void mark_not_written(const BackwardResult<double>&);
template index_t check_solver_output(const BackwardSolver&, const BackwardResult<float>&);
template index_t check_solver_output(const BackwardSolver&, const BackwardResult<double>&);

}  // namespace sinkgrad
