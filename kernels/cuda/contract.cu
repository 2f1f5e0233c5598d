// core/device_runtime.hpp's output contract for results in device memory: the per-matrix text
// of core/solver_contract.hpp, one thread per matrix, on the solve's stream.

#include <algorithm>
#include <climits>
#include <optional>

#include "core/device_runtime.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/readback.hpp"

namespace sinkgrad::device {
namespace {

// first: the smallest (matrix * 8 + breach) over the breaching matrices, or ULLONG_MAX; a
// breaching matrix becomes breakdown with a NaN gradient and 0 iterations.
template <class Real>
__global__ void contract_kernel(BackwardResult<Real> result, unsigned long long* first) {
  const BatchView<Real> gradient = result.grad_logits;
  const index_t entries = index_t(gradient.n) * gradient.n;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < gradient.batch; b += step) {
    Real* values = gradient.data + b * entries;
    bool demoted = false;
    const Breach breach =
        check_matrix_output(result.status[b], result.iterations[b], values, entries, demoted);
    if (breach == Breach::none) continue;
    result.status[b] = SolveStatus::breakdown;
    result.iterations[b] = 0;
    for (index_t k = 0; k < entries; ++k) values[k] = math::quiet_nan<Real>();
    if (first != nullptr)
      atomicMin(first, static_cast<unsigned long long>(b) * 8 + static_cast<unsigned>(breach));
  }
}

}  // namespace

template <class Real>
void mark_not_written(const BackwardResult<Real>& result, void* stream) {
  const BatchView<Real> gradient = result.grad_logits;
  if (gradient.batch == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const auto batch = static_cast<std::size_t>(gradient.batch);
  // All bytes 0xFF: -1 in every int32, a NaN in every float and double.
  SINKGRAD_CUDA_CHECK(
      cudaMemsetAsync(gradient.data, 0xFF, batch * gradient.n * gradient.n * sizeof(Real), s));
  SINKGRAD_CUDA_CHECK(cudaMemsetAsync(result.status, 0xFF, batch * sizeof(SolveStatus), s));
  SINKGRAD_CUDA_CHECK(cudaMemsetAsync(result.iterations, 0xFF, batch * sizeof(std::int32_t), s));
}

template <class Real>
void check_output(const BackwardResult<Real>& result, void* stream, BreachReport* first) {
  if (result.grad_logits.batch == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const index_t blocks = std::min<index_t>((result.grad_logits.batch + 127) / 128, 65535);
  // The first breach's key on the device, when the caller asks for it: a pooled word, so that
  // the check allocates nothing.
  std::optional<cuda::ReadbackWord> key;
  unsigned long long* key_on_device = nullptr;
  if (first != nullptr) {
    key.emplace();
    key_on_device = key->device();
    key->fill(0xFF, stream);
  }
  contract_kernel<Real><<<static_cast<unsigned>(blocks), 128, 0, s>>>(result, key_on_device);
  SINKGRAD_CUDA_CHECK_LAUNCH("the output contract kernel");
  if (first == nullptr) return;
  key->queue_read(stream);
  SINKGRAD_CUDA_CHECK(cudaStreamSynchronize(s));
  const unsigned long long found = key->value();
  if (found == ULLONG_MAX) return;
  first->matrix = static_cast<index_t>(found / 8);
  first->breach = static_cast<Breach>(found % 8);
}

template void mark_not_written(const BackwardResult<float>&, void*);
template void mark_not_written(const BackwardResult<double>&, void*);
template void check_output(const BackwardResult<float>&, void*, BreachReport*);
template void check_output(const BackwardResult<double>&, void*, BreachReport*);

}  // namespace sinkgrad::device
