// CUDA batch driver of the Sinkhorn forward (core/forward_math.hpp), one thread per matrix,
// the potentials f, g in shared memory.

#include "core/forward_math.hpp"
#include "kernels/backward_kernels.hpp"
#include "kernels/per_matrix_launch.cuh"

namespace sinkgrad::cuda {
namespace {

template <class Real>
__global__ void forward_kernel(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                               Real* column_violation, unsigned long long* invalid_count,
                               std::size_t stride) {
  extern __shared__ __align__(16) unsigned char shared_workspace[];
  Real* work = reinterpret_cast<Real*>(shared_workspace) + threadIdx.x * stride;
  const int n = logits.n;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < logits.batch; b += step) {
    const bool ok =
        math::sinkhorn_forward_matrix(logits.matrix(b), n, iterations, R.matrix(b), work);
    if (!ok && invalid_count != nullptr) atomicAdd(invalid_count, 1ULL);
    if (column_violation != nullptr)
      column_violation[b] = ok ? math::column_violation(R.matrix(b), n) : math::quiet_nan<Real>();
  }
}

}  // namespace

template <class Real>
void sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                      Real* column_violation, unsigned long long* invalid_count) {
  if (iterations < 1) throw Error("the forward iteration count T must be >= 1");
  if (logits.batch != R.batch || logits.n != R.n)
    throw Error("forward: logits and R must have the same shape");
  if (logits.batch == 0) return;
  const std::size_t stride = detail::padded_workspace(2 * static_cast<std::size_t>(logits.n));
  auto kernel = &forward_kernel<Real>;
  const detail::LaunchShape shape =
      detail::plan_launch(kernel, logits.batch, stride * sizeof(Real));
  kernel<<<shape.blocks, shape.threads, shape.shared_bytes>>>(
      logits, iterations, R, column_violation, invalid_count, stride);
  SINKGRAD_CUDA_CHECK_LAUNCH("the Sinkhorn forward kernel");
}

template void sinkhorn_forward(BatchView<const float>, int, BatchView<float>, float*,
                               unsigned long long*);
template void sinkhorn_forward(BatchView<const double>, int, BatchView<double>, double*,
                               unsigned long long*);

}  // namespace sinkgrad::cuda
