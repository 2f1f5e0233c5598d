#pragma once
// The one place where every command (grad, run, demo) calls a solver: a solver, built-in or
// from a plugin, is outside code whose output is checked, never trusted.
//
//   - Exception boundary: anything the solve throws (sinkgrad::Error, another std::exception,
//     or something that is not an exception class at all) becomes one sinkgrad::Error naming
//     the solver, `context` (the run, the input) and the cause.
//   - Output contract (host results): every status is a known SolveStatus and every iteration
//     count is >= 0, or the solve is an error naming the first offending matrix; a matrix whose
//     gradient holds NaN or Inf is never counted as ok (or not_converged): its status becomes
//     breakdown.

#include <string>

#include "core/backward_solver.hpp"

namespace sinkgrad::study {

template <class Real>
void solve_checked(const BackwardSolver& solver, const BackwardProblem<Real>& problem,
                   const BackwardResult<Real>& result, Device device, const std::string& context);

// The checks of the contract alone, on a finished host result; returns the number of matrices
// whose status was changed to breakdown.
template <class Real>
index_t check_solver_output(const BackwardSolver& solver, const BackwardResult<Real>& result,
                            const std::string& context);

}  // namespace sinkgrad::study
