// The exact fallback on CUDA (solvers/unrolled/unrolled_fallback.hpp): a kernel lists the
// matrices to replace, unrolled's kernels run on that list, and with FallbackStatus::mark a
// last kernel marks the ones it solved.

#include <cuda_runtime.h>

#include "backend/cuda/check.hpp"
#include "backend/cuda/device_memory.hpp"
#include "backend/cuda/stream.cuh"
#include "solvers/unrolled/unrolled_cuda.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"

namespace sinkgrad::cuda {
namespace {

constexpr int list_threads = 256;

__device__ bool replaced(SolveStatus status, FallbackStatus mode) {
  return mode == FallbackStatus::mark ? status != SolveStatus::ok : !is_success(status);
}

// Appends every matrix to replace to index, counting in *count (zero before). The order of
// the list does not matter: each matrix's replay is its own.
__global__ void list_replaced(const SolveStatus* status, index_t batch, FallbackStatus mode,
                              index_t* index, unsigned long long* count) {
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < batch; b += step)
    if (replaced(status[b], mode)) index[atomicAdd(count, 1ull)] = b;
}

__global__ void mark_replaced(SolveStatus* status, const index_t* index,
                              const unsigned long long* count) {
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x; k < index_t(*count); k += step)
    if (status[index[k]] == SolveStatus::ok) status[index[k]] = SolveStatus::fallback;
}

}  // namespace

template <class Real>
void replace_by_unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         FallbackStatus mode) {
  const index_t batch = problem.grad_output.batch;
  if (batch <= 0) return;
  static_assert(sizeof(unsigned long long) == sizeof(index_t));
  const cudaStream_t stream = stream_of(problem);
  const StreamBuffer list(static_cast<std::size_t>(batch + 1) * sizeof(index_t), problem.stream);
  index_t* index = list.as<index_t>();
  auto* count = reinterpret_cast<unsigned long long*>(index + batch);
  SINKGRAD_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(*count), stream));
  const auto blocks =
      static_cast<unsigned>(std::min<index_t>((batch + list_threads - 1) / list_threads, 4096));
  list_replaced<<<blocks, list_threads, 0, stream>>>(result.status, batch, mode, index, count);
  SINKGRAD_CUDA_CHECK_LAUNCH("the fallback's listing kernel");
  BackwardResult<Real> replay = result;
  replay.residual_history = nullptr;
  replay.diagnostics = {};  // the first solve's, measured on the same R, stay
  if (mode == FallbackStatus::keep) replay.status = nullptr, replay.iterations = nullptr;
  const MatrixSubset subset{index, reinterpret_cast<const index_t*>(count)};
  unrolled(problem, replay, subset);
  if (mode == FallbackStatus::mark) {
    mark_replaced<<<blocks, list_threads, 0, stream>>>(result.status, index, count);
    SINKGRAD_CUDA_CHECK_LAUNCH("the fallback's marking kernel");
  }
}  // the list is freed after the last kernel, in stream order

template void replace_by_unrolled(const BackwardProblem<float>&, const BackwardResult<float>&,
                                  FallbackStatus);
template void replace_by_unrolled(const BackwardProblem<double>&, const BackwardResult<double>&,
                                  FallbackStatus);

}  // namespace sinkgrad::cuda
