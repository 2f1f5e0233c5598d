// The exact fallback on CUDA (solvers/unrolled/unrolled_fallback.hpp): unrolled's kernels run on
// the subset of the batch that the statuses select (kernels/cuda/matrix_subset.hpp), finding
// those matrices themselves, and with FallbackStatus::mark store the ones they solve as
// fallback. One launch, no host synchronisation.

#include "solvers/unrolled/unrolled_cuda.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"

namespace sinkgrad::cuda {

template <class Real>
void replace_by_unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         FallbackStatus mode) {
  if (problem.grad_output.batch <= 0) return;
  BackwardResult<Real> replay = result;
  replay.residual_history = nullptr;
  replay.diagnostics = {};  // the first solve's, measured on the same R, stay
  if (mode == FallbackStatus::keep) replay.status = nullptr, replay.iterations = nullptr;
  unrolled(problem, replay, MatrixSubset{result.status, mode == FallbackStatus::mark});
}

template void replace_by_unrolled(const BackwardProblem<float>&, const BackwardResult<float>&,
                                  FallbackStatus);
template void replace_by_unrolled(const BackwardProblem<double>&, const BackwardResult<double>&,
                                  FallbackStatus);

}  // namespace sinkgrad::cuda
