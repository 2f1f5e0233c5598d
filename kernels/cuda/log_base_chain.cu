// core/device_runtime.hpp's carry of an implicit gradient to the logits, for results in device
// memory: the per-row text of core/log_base_chain.hpp, one thread per row, on the solve's
// stream. The row's softmax is recomputed where it is used, so the thread holds no array.

#include <algorithm>

#include "core/device_runtime.hpp"
#include "core/log_base_chain.hpp"
#include "kernels/cuda/check.hpp"

namespace sinkgrad::device {
namespace {

template <class Real>
__global__ void carry_kernel(ForwardBase base, Real eps, BatchView<const Real> M,
                             BackwardResult<Real> result) {
  const index_t rows = M.batch * M.n;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t row = index_t(blockIdx.x) * blockDim.x + threadIdx.x; row < rows; row += step)
    carry_result_row(base, eps, M, result, row);
}

}  // namespace

template <class Real>
void carry_to_logits(BatchView<const Real> M, const ForwardSpec& spec,
                     const BackwardResult<Real>& result, void* stream) {
  if (M.batch == 0 || !carries_log_base_gradient(spec)) return;
  const index_t blocks = std::min<index_t>((M.batch * M.n + 127) / 128, 65535);
  carry_kernel<Real><<<static_cast<unsigned>(blocks), 128, 0, static_cast<cudaStream_t>(stream)>>>(
      forward_recipe(spec.convention).base, static_cast<Real>(spec.eps), M, result);
  SINKGRAD_CUDA_CHECK_LAUNCH("the kernel carrying the gradient to the logits");
}

template void carry_to_logits(BatchView<const float>, const ForwardSpec&,
                              const BackwardResult<float>&, void*);
template void carry_to_logits(BatchView<const double>, const ForwardSpec&,
                              const BackwardResult<double>&, void*);

}  // namespace sinkgrad::device
