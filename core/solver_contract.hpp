#pragma once
// The output contract every solve is held to, built-in or plugin, whoever calls it (the CLI, the
// studies, the C ABI, the PyTorch layer): BackwardSolver::solve applies it, so a solver is
// outside code whose output is checked, never trusted.
//
//   - Exception boundary: anything solve_cpu or solve_cuda throws (sinkgrad::Error, another
//     std::exception, or something that is not an exception class at all) becomes one
//     sinkgrad::Error naming the solver and the cause.
//   - Output (results in host memory): every status is a known SolveStatus and every iteration
//     count is >= 0, or the solve is an error naming the first offending matrix; a matrix whose
//     gradient holds NaN or Inf is never reported as ok, fallback or not_converged: its status
//     becomes breakdown. A solve on the cpu starts from results marked not written (status and
//     iterations -1, gradient NaN), so that what a solver leaves unwritten is never read as ok.
//   - Output (results in device memory) of a solver from a plugin: the same checks by the same
//     per-matrix text (check_matrix_output), run on the GPU in the solve's stream. A solve that
//     waits throws as on the host; a stream-ordered one cannot throw, so a matrix that breaks the
//     contract becomes breakdown with a NaN gradient. The built-in CUDA solvers are held to the
//     contract by the test suite instead, which spares their results a second pass.

#include <climits>
#include <cstdint>
#include <functional>
#include <string>

#include "core/backward_problem.hpp"

namespace sinkgrad {

class BackwardSolver;

// How one matrix's output breaks the contract.
enum class Breach : std::int32_t {
  none = 0,
  status_not_written,
  unknown_status,
  iterations_not_written,
  negative_iterations,
};

// The contract for one matrix, the same text on the host and the GPU: returns the breach, if
// any; a non-finite gradient under a success or not_converged turns status into breakdown
// (demoted is then true).
template <class Real>
SINKGRAD_HD Breach check_matrix_output(SolveStatus& status, std::int32_t iterations,
                                       const Real* gradient, index_t entries, bool& demoted) {
  demoted = false;
  const auto code = static_cast<std::int32_t>(status);
  if (code == -1) return Breach::status_not_written;
  if (code < 0 || code >= status_count) return Breach::unknown_status;
  if (iterations == -1) return Breach::iterations_not_written;
  if (iterations < 0) return Breach::negative_iterations;
  if (!is_success(status) && status != SolveStatus::not_converged) return Breach::none;
  for (index_t k = 0; k < entries; ++k)
    if (!math::is_finite(gradient[k])) {
      status = SolveStatus::breakdown;
      demoted = true;
      break;
    }
  return Breach::none;
}

// The first matrix whose output broke the contract (matrix -1: none did).
struct BreachReport {
  index_t matrix = -1;
  Breach breach = Breach::none;
};

// The Error's text for a breach: "solver 'name' broke its output contract: ...", with the
// status code and iteration count the solver wrote where they are known.
inline constexpr std::int32_t not_known = INT32_MIN;
std::string breach_message(const BackwardSolver& solver, index_t matrix, Breach breach,
                           std::int32_t status = not_known, std::int32_t iterations = not_known);

// Runs solve, turning whatever it throws into Error("solver 'name' failed: cause").
void behind_exception_boundary(const BackwardSolver& solver, const std::function<void()>& solve);

// Marks a host result not written (status and iterations -1, gradient NaN) before a solve.
template <class Real>
void mark_not_written(const BackwardResult<Real>& result);

// The output checks on a finished host result; returns the number of matrices whose status was
// changed to breakdown. Throws Error for an unknown status code or a negative iteration count.
template <class Real>
index_t check_solver_output(const BackwardSolver& solver, const BackwardResult<Real>& result);

}  // namespace sinkgrad
