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
//     Results in device memory are left as the solver wrote them (the built-in CUDA solvers are
//     held to the contract by the test suite).

#include <functional>
#include <string>

#include "core/backward_problem.hpp"

namespace sinkgrad {

class BackwardSolver;

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
