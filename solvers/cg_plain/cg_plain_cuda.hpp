#pragma once
// The CUDA batch driver of `cg_plain` (solvers/cg_plain/cg_plain_math.hpp, one team of lanes
// per matrix), for float and double, n <= 1024, on the exact side of R: after a forward whose last
// step normalised columns the system of R^T and G^T (solvers/common/exact_side.hpp), read
// transposed by the kernel itself, so that nothing is allocated and nothing waits. `project` is
// the side to project the gradient on in those coordinates (solvers/common/invariant_side.hpp).
// Every pointer and view is CUDA device memory. The call launches on the problem's stream and
// returns without waiting: launch errors throw sinkgrad::Error at once, errors while the
// kernel runs surface at the next checked synchronising call (cuda::synchronize). Compiled only
// when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"
#include "solvers/common/cg_math.hpp"

namespace sinkgrad::cuda {

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings,
              math::GradientSide project = math::GradientSide::none);

}  // namespace sinkgrad::cuda
