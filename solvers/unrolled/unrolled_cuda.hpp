#pragma once
// The CUDA batch driver of `unrolled`, for float and double, every n >= 1.
// Every pointer and view is CUDA device memory. The call launches on the problem's stream
// (cuda::stream_of(problem); null: the legacy default stream) and returns without waiting: launch
// errors throw sinkgrad::Error at once, errors while the kernel runs surface at the next checked
// synchronising call (cuda::synchronize). Compiled only when the build has CUDA
// (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "kernels/cuda/matrix_subset.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"

namespace sinkgrad::cuda {

// n <= 1024: one team per matrix (solvers/unrolled/unrolled_team.hpp), the replay's tape in
// shared memory up to n = 64, checkpointed when T > 23, in global scratch above; larger n, one
// thread per matrix (convention_unrolled.hpp). Throws Error when T is so large that even the
// smallest checkpointed tape exceeds a block's shared memory. With a subset only its matrices are
// solved (the exact fallback, solvers/unrolled/unrolled_fallback.hpp), with the same bits.
template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              MatrixSubset subset = {});

// replace_by_unrolled (solvers/unrolled/unrolled_fallback.hpp) in device memory.
template <class Real>
void replace_by_unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         FallbackStatus status);

}  // namespace sinkgrad::cuda
