#pragma once
// The CUDA batch driver: the device twin of kernels/cpu/batch_loop.hpp. It runs a per-matrix solve
// for every matrix of a batch, one GPU thread per matrix (grid-stride, 64-bit indices, so any
// batch size works with one launch), gives each thread its own workspace in shared memory (on
// chip), and stores each matrix's status and iteration count.
//
// Usage, from a .cu file (a plugin solver's CUDA variant looks exactly like this):
//
//   struct MySolve {  // or an extended __device__ lambda (--extended-lambda; its enclosing
//                     // function must not be a private or protected class member)
//     BackwardProblem<double> problem;    // captured by value: views and plain numbers only
//     BackwardResult<double> result;
//     __device__ MatrixOutcome operator()(index_t b, double* work, double* history) const {
//       return my_math::solve_matrix(problem.forward_output.matrix(b), ..., work, history);
//     }
//   };
//   cuda::launch_per_matrix<double>(result, batch, workspace_reals, MySolve{problem, result},
//                                   cuda::stream_of(problem));
//
// Contract:
//   - per_matrix(b, work, history) -> MatrixOutcome is called once for every b in [0, batch),
//     on the device; `work` points to workspace_reals Reals private to the call (shared memory,
//     uninitialised, 16-byte aligned); `history` is result.residual_history's row b, or null
//     when result.residual_history is null.
//   - result.status[b] and result.iterations[b] are written from the outcome (unless status is
//     null; and result.diagnostics.relative_residual[b] from its residual, when wanted);
//     everything else
//     (the gradient) is written by per_matrix itself. Every pointer must be device memory.
//   - The launch goes to `stream` (default: the legacy default stream) and is asynchronous.
//     Pass cuda::stream_of(problem): a caller that solves on its own stream
//     (BackwardSolver::solve_async, the PyTorch layer) relies on it;
//     launch errors throw sinkgrad::Error at once, errors while running surface at the next
//     checked synchronising call (BackwardSolver::solve synchronises and checks).
//   - Throws Error when even one thread's workspace does not fit into the shared memory of a
//     block (about 227 KB on Hopper): per matrix that is 28,000 floats or 14,000 doubles.
//
// Stable interface: only this function and its contract are meant for use outside kernels/.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/backward_problem.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/launch_cache.hpp"
#include "kernels/cuda/matrix_subset.hpp"
#include "kernels/cuda/stream.cuh"

namespace sinkgrad::cuda {

namespace detail {

// Threads of a block per launch at most; fewer when the workspace is large.
inline constexpr int max_threads_per_block = 128;

// Workspace stride per thread, in Reals: rounded up to an odd number of 32-bit words per
// thread (float) or of 64-bit words (double), so that a warp touching the same offset of its
// threads' workspaces hits distinct shared-memory banks.
inline std::size_t padded_workspace(std::size_t workspace_reals) {
  return workspace_reals == 0 ? 0 : (workspace_reals | std::size_t(1));
}

template <class Real, class PerMatrix>
__global__ void per_matrix_kernel(BackwardResult<Real> result, index_t batch, std::size_t stride,
                                  PerMatrix per_matrix, MatrixSubset subset) {
  extern __shared__ __align__(16) unsigned char shared_workspace[];
  Real* work = reinterpret_cast<Real*>(shared_workspace) + threadIdx.x * stride;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < batch; b += step) {
    if (!subset.selects(b)) continue;
    Real* history = result.residual_history != nullptr
                        ? result.residual_history + b * result.history_stride
                        : nullptr;
    const MatrixOutcome outcome = per_matrix(b, work, history);
    if (result.status != nullptr) {
      result.status[b] = subset.stored(outcome.status);
      result.iterations[b] = outcome.iterations;
    }
    if (result.diagnostics.relative_residual != nullptr)
      result.diagnostics.relative_residual[b] = Real(outcome.residual);
  }
}

// Shared memory a block may use once opted in (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline std::size_t shared_memory_per_block() {
  return device_limits().shared_optin;
}

inline int multiprocessor_count() {
  return device_limits().multiprocessors;
}

// Blocks of `kernel` with `threads` threads and shared_bytes of shared memory that are resident
// on the device at once (at least one per multiprocessor).
template <class Kernel>
index_t resident_blocks(Kernel kernel, int threads, std::size_t shared_bytes) {
  const int per_multiprocessor =
      blocks_per_multiprocessor(reinterpret_cast<const void*>(kernel), threads, shared_bytes);
  return index_t(per_multiprocessor > 0 ? per_multiprocessor : 1) * multiprocessor_count();
}

struct LaunchShape {
  unsigned blocks;
  int threads;
  std::size_t shared_bytes;
};

// One thread per matrix: as many threads per block as the shared memory allows (at most
// max_threads_per_block, whole warps where possible), and as many blocks as can be resident
// at once (never more than the batch needs); the kernels stride over the rest of the batch.
// Opts the kernel into more than 48 KB of shared memory when it needs it.
template <class Kernel>
LaunchShape plan_launch(Kernel kernel, index_t batch, std::size_t bytes_per_thread) {
  const std::size_t shared_limit = shared_memory_per_block();
  int threads = max_threads_per_block;
  if (bytes_per_thread > 0) {
    const std::size_t fit = shared_limit / bytes_per_thread;
    if (fit == 0)
      throw Error("a per-matrix workspace of " + std::to_string(bytes_per_thread) +
                  " bytes does not fit into the " + std::to_string(shared_limit) +
                  " bytes of shared memory of a CUDA block");
    if (fit < std::size_t(threads)) threads = fit >= 32 ? int(fit / 32 * 32) : int(fit);
  }
  if (index_t(threads) > batch) threads = static_cast<int>(batch);
  const std::size_t shared_bytes = bytes_per_thread * threads;
  if (shared_bytes > 48 * 1024)
    allow_dynamic_shared(reinterpret_cast<const void*>(kernel), shared_bytes);
  const index_t needed = (batch + threads - 1) / threads;
  const index_t resident = resident_blocks(kernel, threads, shared_bytes);
  return {static_cast<unsigned>(std::min(needed, resident)), threads, shared_bytes};
}

}  // namespace detail

// Largest per-matrix workspace (in Reals) that launch_per_matrix accepts on this device
// when it runs `threads` matrices per block.
template <class Real>
std::size_t max_workspace_reals(int threads = 1) {
  const std::size_t per_thread = detail::shared_memory_per_block() / sizeof(Real) / threads;
  return per_thread % 2 == 1 ? per_thread : (per_thread == 0 ? 0 : per_thread - 1);
}

template <class Real, class PerMatrix>
void launch_per_matrix(const BackwardResult<Real>& result, index_t batch,
                       std::size_t workspace_reals, PerMatrix per_matrix,
                       cudaStream_t stream = nullptr, MatrixSubset subset = {}) {
  if (batch <= 0) return;
  const std::size_t stride = detail::padded_workspace(workspace_reals);
  auto kernel = &detail::per_matrix_kernel<Real, PerMatrix>;
  const detail::LaunchShape shape = detail::plan_launch(kernel, batch, stride * sizeof(Real));
  kernel<<<shape.blocks, shape.threads, shape.shared_bytes, stream>>>(result, batch, stride,
                                                                      per_matrix, subset);
  SINKGRAD_CUDA_CHECK_LAUNCH("a per-matrix kernel");
}

}  // namespace sinkgrad::cuda
