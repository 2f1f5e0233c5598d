#pragma once
// A solve as the commands (grad, run, demo) make it: BackwardSolver::solve with its exception
// boundary and output contract (core/solver_contract.hpp), its errors naming `context` (the run,
// the input) beside the solver: "solver 'name' (context) failed: cause".

#include <string>

#include "core/backward_solver.hpp"

namespace sinkgrad::study {

template <class Real>
void solve_checked(const BackwardSolver& solver, const BackwardProblem<Real>& problem,
                   const BackwardResult<Real>& result, Device device, const std::string& context);

}  // namespace sinkgrad::study
