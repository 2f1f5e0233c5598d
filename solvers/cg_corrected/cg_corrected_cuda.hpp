#pragma once
// The CUDA batch driver of `cg_corrected` (solvers/cg_corrected/cg_corrected_math.hpp, one
// team per matrix), for float and double, n <= 1024; `project`: the side to project the
// gradient on (solvers/common/invariant_side.hpp).
// Every pointer and view is CUDA device memory. The call launches on the problem's stream
// (cuda::stream_of(problem); null: the legacy default stream) and returns without waiting: launch
// errors throw sinkgrad::Error at once, errors while the kernel runs surface at the next checked
// synchronising call (cuda::synchronize). Compiled only when the build has CUDA
// (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "solvers/cg_corrected/implicit_trust.hpp"
#include "solvers/common/cg_math.hpp"
#include "solvers/common/invariant_side.hpp"

namespace sinkgrad::cuda {

// project: the side to project the gradient on, in the coordinates of the tiles (transposed
// after a forward that left the columns exact); trust: as cg_corrected_matrix's (the default
// trusts every matrix).
template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings, math::GradientSide project,
                  math::ImplicitTrust<Real> trust = {});

}  // namespace sinkgrad::cuda
