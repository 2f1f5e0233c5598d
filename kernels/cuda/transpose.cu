#include "kernels/cuda/transpose.hpp"

#include <algorithm>

#include "kernels/cuda/check.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real>
__global__ void transpose_kernel(const Real* in, Real* out, index_t batch, int n) {
  const index_t nn = index_t(n) * n;
  const index_t total = batch * nn;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += step) {
    const index_t b = k / nn;
    const index_t i = k / n % n, j = k % n;
    out[b * nn + j * n + i] = in[k];
  }
}

}  // namespace

template <class Real>
void transpose_each_matrix(const Real* in, Real* out, index_t batch, int n, void* stream) {
  const index_t total = batch * index_t(n) * n;
  if (total == 0) return;
  const index_t blocks = std::min<index_t>((total + 255) / 256, 65535);
  transpose_kernel<Real>
      <<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(in, out, batch,
                                                                                     n);
  SINKGRAD_CUDA_CHECK_LAUNCH("the batch transpose kernel");
}

template void transpose_each_matrix(const float*, float*, index_t, int, void*);
template void transpose_each_matrix(const double*, double*, index_t, int, void*);

}  // namespace sinkgrad::cuda
