#pragma once
// The batch driver of `cg_corrected` on either device, for the solvers built on it (auto):
// every view in host memory on the cpu, in device memory on cuda (launched on the problem's
// stream, returning without waiting). project: onto the forward's invariant subspace
// (solvers/common/invariant_side.hpp); trust: which matrices to leave to the exact fallback
// (cg_corrected_math.hpp; the default: none).

#include "core/backward_problem.hpp"
#include "core/types.hpp"
#include "solvers/cg_corrected/implicit_trust.hpp"
#include "solvers/common/cg_math.hpp"

namespace sinkgrad {

template <class Real>
void cg_corrected_batch(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                        Device device, math::CgSettings<Real> settings, bool project,
                        math::ImplicitTrust<Real> trust = {});

// cg_corrected's default iteration count for n: n - 1 suffice in exact arithmetic, the rest
// absorbs rounding.
inline int cg_corrected_auto_iterations(int n) {
  return 2 * n;
}

}  // namespace sinkgrad
