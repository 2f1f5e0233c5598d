#pragma once
// The GPU team of kernels/team.hpp for 64 < n <= 1024: one block of W = n rounded up to 32
// threads per matrix, thread i owning row i (one slot). A lane's rows and lines cannot live in
// registers at these sizes; they live in global scratch laid out so that the W lanes reading
// entry j of their own rows touch consecutive addresses. Vectors are exchanged through shared
// memory with block barriers, and sums are taken in the canonical order of kernels/team.hpp (the
// 32-lane order: warp 0 adds components l, l + 32, ... and combines the 32 sums by a
// butterfly), so that a CG solve gives the bits of the CPU's team at every n.

#include <cuda_runtime.h>

#include "kernels/team.hpp"

namespace sinkgrad::cuda {

// The compile-time shape of the block team (launch.cuh dispatches on `block`): one slot a
// lane, loops bounded by cap, n at run time.
struct BlockShape {
  static constexpr bool block = true;
  static constexpr int W = 0;  // run time: blockDim.x
  static constexpr int K = 1;
  static constexpr int N = 0;
  static constexpr int cap = 1024;
};

// Largest n of the team-form algorithms on the GPU: a block's 1024 threads, one row each.
inline constexpr int max_block_team_n = BlockShape::cap;

// Reals between a team's stored vectors (team.stride()): n rounded up to whole 16-byte words.
__host__ __device__ inline int block_team_stride(int n) {
  return (n + 3) / 4 * 4;
}

// Shared memory of a block team, in Reals: two exchange buffers and the reduction buffer of
// one stride each, and the two values of sum() and broadcast().
__host__ __device__ inline int block_team_shared_reals(int n) {
  return 3 * block_team_stride(n) + 2;
}

// Global scratch of a block team, in Reals: three sets of rows and two lines (n entries for
// each of the W lanes), then `storage` Reals of team.storage().
__host__ __device__ inline long long block_team_scratch_reals(int n, long long storage) {
  const long long W = (n + 31) / 32 * 32;
  return 5 * W * n + (storage + 3) / 4 * 4;
}

template <class Real>
class CudaBlockTeam {
 public:
  static constexpr int cap = BlockShape::cap;
  static constexpr bool columns_from_rows = false;
  static constexpr bool one_lane = false;

  struct Vec {
    Real v[1];
    __device__ Real& operator[](math::Slot) { return v[0]; }
    __device__ const Real& operator[](math::Slot) const { return v[0]; }
  };

  // shared: block_team_shared_reals(n); scratch: block_team_scratch_reals(n, ...), rows and
  // lines first.
  __device__ CudaBlockTeam(int n, Real* shared, Real* scratch)
      : n_(n),
        lane_(static_cast<int>(threadIdx.x)),
        width_(static_cast<int>(blockDim.x)),
        stride_(block_team_stride(n)),
        exchange_(shared),
        reduce_(shared + 2 * stride_),
        scratch_(scratch) {}

  __device__ int n() const { return n_; }
  __device__ int lane() const { return lane_; }
  __device__ bool leader() const { return lane_ == 0; }
  __device__ void sync() const { __syncthreads(); }

  template <class F>
  __device__ void each(F&& f) const {
    if (lane_ < n_) f(math::Slot{lane_, 0});
  }

  template <class F>
  __device__ Real sum(F&& f) const {
    return reduce(f, false, [](Real a, Real b) { return a + b; });
  }

  template <class F, class G>
  __device__ math::SumPair<Real> sum2(F&& f, G&& g) const {
    return {sum(f), sum(g)};
  }

  template <class F>
  __device__ Real max(F&& f) const {
    return reduce(f, true, [](Real a, Real b) { return math::max_of(a, b); });
  }

  __device__ bool all(bool ok) const { return __syncthreads_and(ok ? 1 : 0) != 0; }

  // f is evaluated on every lane (at its own row, slot 0), only the owner's value is kept.
  template <class F>
  __device__ Real broadcast(int i, F&& f) const {
    const Real v = f(math::Slot{i, 0});
    if (lane_ == i) reduce_[stride_ + 1] = v;
    __syncthreads();
    const Real value = reduce_[stride_ + 1];
    __syncthreads();  // every lane has read it before the next broadcast writes
    return value;
  }

  // Lane-private rows: entry j of this lane's row at data[j * W] (the lanes of a warp
  // side by side).
  struct Rows {
    Real* data;
    int width;
    __device__ math::StridedView<Real> operator[](math::Slot) const { return {data, width}; }
  };
  template <int id>
  __device__ Rows rows() const {
    return {scratch_ + id * row_set_reals() + lane_, width_};
  }

  using Line = math::StridedView<Real>;
  template <int id>
  __device__ Line line() const {
    return {scratch_ + (3 + id) * row_set_reals() + lane_, width_};
  }

  // Two buffers used in turn, as CudaTeam's; components from n to the stride read as 0.
  __device__ const Real* share(const Vec& v) const {
    Real* buffer = exchange_ + which_ * stride_;
    which_ ^= 1;
    if (lane_ < stride_) buffer[lane_] = lane_ < n_ ? v.v[0] : Real(0);
    __syncthreads();
    return buffer;
  }

  __device__ Real* storage() const { return scratch_ + 5 * row_set_reals(); }
  __device__ int stride() const { return stride_; }
  __device__ void store(Real* where, const Vec& v) const {
    each([&](math::Slot s) { where[s.i] = v.v[0]; });
  }
  __device__ const Real* load(const Real* where) const { return where; }

 private:
  // Combines f over the components: warp 0 combines components l, l + 32, ... in lane l,
  // starting from 0 (or from component 0: from_first), then the 32 lanes by a butterfly.
  template <class F, class Combine>
  __device__ Real reduce(F& f, bool from_first, Combine combine) const {
    each([&](math::Slot s) { reduce_[s.i] = f(s); });
    __syncthreads();
    if (lane_ < 32) {
      Real partial = from_first ? reduce_[0] : Real(0);
      for (int i = lane_; i < n_; i += 32) partial = combine(partial, reduce_[i]);
#pragma unroll
      for (int distance = 16; distance > 0; distance /= 2)
        partial = combine(partial, __shfl_xor_sync(0xffffffffu, partial, distance));
      if (lane_ == 0) reduce_[stride_] = partial;
    }
    __syncthreads();
    // The next writer of reduce_[stride_] (warp 0, after the next call's first barrier) comes
    // after every lane's read here.
    return reduce_[stride_];
  }

  __device__ long long row_set_reals() const {
    return static_cast<long long>(width_) * n_;
  }

  int n_;
  int lane_;
  int width_;
  int stride_;
  Real* exchange_;
  Real* reduce_;
  Real* scratch_;
  mutable int which_ = 0;
};

}  // namespace sinkgrad::cuda
