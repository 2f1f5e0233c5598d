#pragma once
// The CUDA batch driver of `direct`: the dense factorisations of
// solvers/direct/dense_factorisation.hpp in place of Eigen, for float and double, every n.
// Every pointer and view is CUDA device memory. The call launches on the problem's stream
// (cuda::stream_of(problem); null: the legacy default stream) and returns without waiting: launch
// errors throw sinkgrad::Error at once, errors while the kernel runs surface at the next checked
// synchronising call (cuda::synchronize). Compiled only when the build has CUDA
// (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "solvers/common/implicit_math.hpp"

namespace sinkgrad::cuda {

// The corrected system for n <= 1024 in team form (solvers/direct/direct_team.hpp), the plain
// system and larger n one thread per matrix (direct_math.hpp); `project`: the side to project
// the gradient on (solvers/common/invariant_side.hpp).
template <class Real>
void direct(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
            math::SchurSystem system, math::GradientSide project = math::GradientSide::none);

}  // namespace sinkgrad::cuda
