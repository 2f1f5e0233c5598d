// core/device_runtime.hpp's carry of an implicit gradient to the logits, for results in device
// memory: the per-row text of core/log_base_chain.hpp on the solve's stream, carry_width(n)
// lanes of a warp per row (one thread per short row; above n = 8, 8 lanes reading neighbouring
// entries). The row's softmax is recomputed where it is used, so a lane holds no array.

#include <algorithm>

#include "core/device_runtime.hpp"
#include "core/log_base_chain.hpp"
#include "kernels/cuda/check.hpp"

namespace sinkgrad::device {
namespace {

constexpr int warp_size = 32;
constexpr int block_threads = 256;

// Lane `lane` of a row's team of `width` lanes (a power of two, aligned in its warp); `members`:
// the warp's lanes whose teams carry a row in this sweep (a team is in or out as a whole, so
// every exchange partner is a member).
struct WarpRowLanes {
  int n;
  int lane;
  int width;
  unsigned members;

  template <class F>
  __device__ void each(F&& f) const {
    for (int k = lane; k < n; k += width) f(k);
  }

  // RowLanes::sum's order: this lane's entries ascending, then the butterfly; lane l adds the
  // partner's sum to its own, and a + b = b + a, so every lane of the team ends with the bits
  // of lane 0's.
  template <class F>
  __device__ auto sum(F&& value) const -> decltype(value(0)) {
    decltype(value(0)) partial = 0;
    for (int k = lane; k < n; k += width) partial += value(k);
    for (int distance = width / 2; distance > 0; distance /= 2)
      partial = partial + __shfl_xor_sync(members, partial, distance, width);
    return partial;
  }

  template <class F>
  __device__ auto max(F&& value) const -> decltype(value(0)) {
    auto top = value(lane);
    for (int k = lane + width; k < n; k += width) top = math::max_of(top, value(k));
    for (int distance = width / 2; distance > 0; distance /= 2)
      top = math::max_of(top, __shfl_xor_sync(members, top, distance, width));
    return top;
  }
};

// Warps grid-stride over sweeps of 32 / width rows; the loop's bound is the same on every lane
// of a warp, so the ballot and the exchanges see the whole warp.
template <class Real>
__global__ void __launch_bounds__(block_threads)
    carry_kernel(ForwardBase base, Real eps, BatchView<const Real> M, BackwardResult<Real> result,
                 int width) {
  const int n = M.n;
  const index_t rows = M.batch * n;
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  const int per_warp = warp_size / width;
  const index_t warp = (index_t(blockIdx.x) * block_threads + threadIdx.x) / warp_size;
  const index_t step = index_t(gridDim.x) * (block_threads / warp_size) * per_warp;
  for (index_t sweep = warp * per_warp; sweep < rows; sweep += step) {
    const index_t row = sweep + lane / width;
    const bool carried = row < rows && carries_result_row(result, n, row);
    const unsigned members = __ballot_sync(0xffffffffu, carried);
    if (carried)
      carry_row_to_logits(WarpRowLanes{n, lane % width, width, members}, base, eps,
                          M.data + row * n, result.grad_logits.data + row * n);
    __syncwarp();
  }
}

}  // namespace

template <class Real>
void carry_to_logits(BatchView<const Real> M, const ForwardSpec& spec,
                     const BackwardResult<Real>& result, void* stream) {
  if (M.batch == 0 || !carries_log_base_gradient(spec)) return;
  const int width = carry_width(M.n);
  const index_t rows_per_block = index_t(block_threads / width);
  const index_t blocks =
      std::min<index_t>((M.batch * M.n + rows_per_block - 1) / rows_per_block, 65535);
  carry_kernel<Real>
      <<<static_cast<unsigned>(blocks), block_threads, 0, static_cast<cudaStream_t>(stream)>>>(
          forward_recipe(spec.convention).base, static_cast<Real>(spec.eps), M, result, width);
  SINKGRAD_CUDA_CHECK_LAUNCH("the kernel carrying the gradient to the logits");
}

template void carry_to_logits(BatchView<const float>, const ForwardSpec&,
                              const BackwardResult<float>&, void*);
template void carry_to_logits(BatchView<const double>, const ForwardSpec&,
                              const BackwardResult<double>&, void*);

}  // namespace sinkgrad::device
