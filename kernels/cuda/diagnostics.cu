#include "kernels/cuda/diagnostics.hpp"

#include <algorithm>

#include "core/solve_diagnostics.hpp"
#include "kernels/cuda/check.hpp"

namespace sinkgrad::cuda {
namespace {

// A thread per matrix, the CPU pass's text: the violations' sums run in the same order and so
// give the CPU's bits. Opt-in and read-once, so no tiling: adjacent threads read adjacent
// matrices, which the caches serve for the small n of practice.
template <class Real>
__global__ void diagnostics_kernel(BatchView<const Real> R, SolveDiagnostics<Real> diagnostics) {
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < R.batch; b += step)
    store_matrix_diagnostics(diagnostics, b, R.matrix(b), R.n);
}

}  // namespace

template <class Real>
void store_diagnostics(BatchView<const Real> R, const SolveDiagnostics<Real>& diagnostics,
                       void* stream) {
  if (R.batch == 0 || !diagnostics.any()) return;
  const index_t blocks = std::min<index_t>((R.batch + 127) / 128, 65535);
  diagnostics_kernel<Real>
      <<<static_cast<unsigned>(blocks), 128, 0, static_cast<cudaStream_t>(stream)>>>(R,
                                                                                     diagnostics);
  SINKGRAD_CUDA_CHECK_LAUNCH("the solve diagnostics kernel");
}

template void store_diagnostics(BatchView<const float>, const SolveDiagnostics<float>&, void*);
template void store_diagnostics(BatchView<const double>, const SolveDiagnostics<double>&, void*);

}  // namespace sinkgrad::cuda
