#pragma once
// The exact fallback: the matrices a first solve did not solve get unrolled's gradient,
// computed for those matrices only, with the very bits `unrolled` gives them in a batch of its
// own (so that auto and on_failure="unrolled" cost a whole unrolled solve only where every
// matrix needs one). On the cpu: host memory. On cuda: device memory, launched on the problem's
// stream, returning without waiting for the GPU: its kernels find the matrices on the device
// (kernels/cuda/matrix_subset.hpp), so nobody waits to count them.

#include "core/backward_problem.hpp"
#include "core/types.hpp"

namespace sinkgrad {

enum class FallbackStatus {
  // Every matrix whose status is not ok is replaced; those unrolled solved say fallback (the
  // others unrolled's own status) and its iteration count (auto).
  mark,
  // Every matrix whose status is not a success (is_success) is replaced; status and iterations
  // stay the first solver's, to say which matrices were (on_failure="unrolled").
  keep,
};

// problem.logits are required (the replay); residual histories are left as they are.
template <class Real>
void replace_by_unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         Device device, FallbackStatus status);

}  // namespace sinkgrad
