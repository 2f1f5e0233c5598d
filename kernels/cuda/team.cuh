#pragma once
// The GPU team of kernels/team.hpp: W consecutive lanes of one warp working on one matrix.
//
// Lane l owns rows l, l + W (K = 1 or 2 slots; W = team_width(n): 8, 16 or 32). For n <= 4 a
// team is a single thread (W = 1, K = 4) that owns the whole matrix in registers: every
// matrix-vector product is then four independent dot products in one thread, no lane waits for
// another, and a warp works on 32 matrices at once (a 4-lane team spends most of its time in
// the latency of its exchanges). Kernels that would hold too much per thread that way keep 4
// lanes, and the float32 forward and CG run n <= 8 in one thread too (team_shape.cuh).
//
// Teams exchange vectors through a small per-team buffer in shared memory (share()) and reduce
// with xor shuffles inside their W lanes (sum()), in the canonical order of kernels/team.hpp.

#include <cuda_runtime.h>

#include "kernels/cuda/vec16.cuh"
#include "kernels/team.hpp"

namespace sinkgrad::cuda {

// Threads of a block of warp teams (launch.cuh).
inline constexpr int team_block_threads = 128;

// The compile-time shape of a team: W lanes, K slots per lane, and n itself when it is fixed
// (N > 0: the sizes common in practice get index arithmetic and loops without run-time n).
template <int W_, int K_, int N_ = 0>
struct TeamShape {
  static constexpr bool block = false;  // the block team's shape is BlockShape (block_team.cuh)
  static constexpr int W = W_;
  static constexpr int K = K_;
  static constexpr int N = N_;
  static constexpr int cap = W_ * K_;
};

// The exchange buffers of a block's teams (share()). With several teams to a warp, buffer b of
// team k is at b * buffer_span + k * cap: the teams of a warp, which write the same buffer at
// once, fill the banks side by side. (A team's two buffers side by side put teams two vectors
// apart, on the same banks: every share's store conflicted 2-way at n = 4 and 8.) A
// warp-wide team keeps its two side by side.
template <class Shape>
struct TeamExchange {
  static constexpr int W = Shape::W;
  static constexpr int cap = Shape::cap;
  static constexpr int buffer_span = W == 32 ? cap : team_block_threads / W * cap;
  // Where team k's buffer 0 is, and the Reals that the buffers of `teams` teams take.
  __host__ __device__ static constexpr int offset(int k) { return W == 32 ? 2 * cap * k : cap * k; }
  __host__ __device__ static constexpr int reals(int teams) {
    return W == 1 ? 0 : W == 32 ? 2 * cap * teams : 2 * buffer_span;
  }
};

// A team's storage for `reals` Reals asked: whole 16-byte words (tiles and later storage stay
// aligned), and with several teams to a warp (4 <= W <= 16) an odd number of vectors of cap
// Reals. The teams of a warp use their storage at the same offsets at once: regions an even
// number of vectors apart start on the same banks and conflict, an odd number apart fill the
// banks side by side. (The eps `unrolled` tape of 42 vectors conflicted 2-way on every tape
// access, and the float64 n = 4 reverse loop stalled on it.)
template <class Shape>
__host__ __device__ constexpr int team_storage_reals(int reals) {
  reals = (reals + 3) / 4 * 4;
  if (Shape::W == 1 || Shape::W == 32 || reals == 0) return reals;
  return ((reals + Shape::cap - 1) / Shape::cap | 1) * Shape::cap;
}

template <class Real, class Shape>
class CudaTeam {
 public:
  static constexpr int W = Shape::W;
  static constexpr int K = Shape::K;
  static constexpr int cap = Shape::cap;
  static constexpr bool columns_from_rows = W == 1;  // the whole matrix in registers
  static constexpr bool one_lane = W == 1;

  struct Vec {
    Real v[K];
    __device__ Real& operator[](math::Slot s) { return v[s.k]; }
    __device__ const Real& operator[](math::Slot s) const { return v[s.k]; }
  };

  // exchange: the team's buffer 0 (TeamExchange); storage: the team's scratch (16-byte aligned,
  // whole vectors of cap Reals).
  __device__ CudaTeam(int n, int lane, unsigned mask, Real* exchange, Real* storage)
      : n_(n), lane_(lane), mask_(mask), exchange_(exchange), storage_(storage) {}

  __device__ int n() const { return Shape::N > 0 ? Shape::N : n_; }
  __device__ int lane() const { return lane_; }
  __device__ bool leader() const { return lane_ == 0; }
  // A one-thread team needs no synchronisation: it reads only what it wrote itself (a warp-level
  // primitive with a per-team mask costs a run-time check of the masks).
  __device__ void sync() const {
    if constexpr (W > 1) __syncwarp(mask_);
  }

  template <class F>
  __device__ void each(F&& f) const {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = lane_ + W * k;
      if (i < n()) f(math::Slot{i, k});
    }
  }

  template <class F>
  __device__ Real sum(F&& f) const {
    Real partial = lane_partial(f);
#pragma unroll
    for (int distance = W / 2; distance > 0; distance /= 2)
      partial = partial + __shfl_xor_sync(mask_, partial, distance, W);
    return partial;
  }

  // Both butterflies interleaved: the latency of one for the two sums.
  template <class F, class G>
  __device__ math::SumPair<Real> sum2(F&& f, G&& g) const {
    Real first = lane_partial(f), second = lane_partial(g);
#pragma unroll
    for (int distance = W / 2; distance > 0; distance /= 2) {
      first = first + __shfl_xor_sync(mask_, first, distance, W);
      second = second + __shfl_xor_sync(mask_, second, distance, W);
    }
    return {first, second};
  }

  template <class F>
  __device__ Real max(F&& f) const {
    Real largest = f(math::Slot{lane_ < n() ? lane_ : 0, 0});
    each([&](math::Slot s) { largest = math::max_of(largest, f(s)); });
#pragma unroll
    for (int distance = W / 2; distance > 0; distance /= 2)
      largest = math::max_of(largest, __shfl_xor_sync(mask_, largest, distance, W));
    return largest;
  }

  // A butterfly of shuffles rather than __all_sync: a vote whose mask differs between the teams
  // of a warp runs once per team in turn (32 times for W = 1), a shuffle once for the warp.
  __device__ bool all(bool ok) const {
    int all_ok = ok ? 1 : 0;
#pragma unroll
    for (int distance = W / 2; distance > 0; distance /= 2)
      all_ok &= __shfl_xor_sync(mask_, all_ok, distance, W);
    return all_ok != 0;
  }

  // One shuffle: cheaper than share() when a round finalises a single component. Every lane
  // evaluates f at the slot of i (compile-time when i is), never behind a test lane == i: the
  // compiler would index the lane's rows with the lane number and move them to local memory.
  // A one-thread team owns every component: a shuffle would only add its latency to the chain
  // of rounds (direct's solves broadcast 2n times each).
  template <class F>
  __device__ Real broadcast(int i, F&& f) const {
    const Real v = f(math::Slot{i, i / W});
    if constexpr (W == 1)
      return v;
    else
      return __shfl_sync(mask_, v, i % W, W);
  }

  // Lane-private rows in registers (K = 1; local memory for K = 2).
  struct Rows {
    Real v[K][cap];
    __device__ Real (&operator[](math::Slot s))[cap] { return v[s.k]; }
    __device__ const Real (&operator[](math::Slot s) const)[cap] { return v[s.k]; }
  };
  template <int id>
  __device__ Rows rows() const {
    return Rows{};
  }

  // A lane-private vector in registers, indexed by compile-time loop counters only.
  struct Line {
    Real v[cap];
    __device__ Line() {}  // uninitialised, as the array it stands for
    __device__ Real& operator[](int j) { return v[j]; }
    __device__ const Real& operator[](int j) const { return v[j]; }
  };
  template <int id>
  __device__ Line line() const {
    return Line();
  }

  // A whole vector in registers (K = 1), read from shared memory with 16-byte loads.
  struct Gathered {
    Real v[cap];
    __device__ const Real& operator[](int j) const { return v[j]; }
  };

  // Two buffers used in turn: a lane writing one has passed the barrier of the previous
  // share(), which every lane reaches only after its last read of the view before that.
  // Components at or above n read as 0.
  __device__ auto share(const Vec& v) const {
    if constexpr (W == 1) {  // the lane owns the whole vector already
      Gathered gathered;
#pragma unroll
      for (int k = 0; k < K; ++k) gathered.v[k] = k < n() ? v.v[k] : Real(0);
      return gathered;
    }
    Real* buffer = exchange_ + which_ * TeamExchange<Shape>::buffer_span;
    which_ ^= 1;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = lane_ + W * k;
      buffer[i] = i < n() ? v.v[k] : Real(0);
    }
    __syncwarp(mask_);
    return load(buffer);
  }

  __device__ Real* storage() const {
    return storage_;
  }
  __device__ int stride() const {
    return cap;
  }
  __device__ void store(Real* where, const Vec& v) const {
    each([&](math::Slot s) { where[s.i] = v.v[s.k]; });
  }

  // The vector at where (cap Reals, 16-byte aligned): in registers for K = 1 or W = 1, read
  // with 16-byte loads; a pointer into shared memory for K = 2.
  __device__ auto load(const Real* where) const {
    if constexpr (K == 1 || W == 1) {
      constexpr int per_load = reals_per_vec16<Real>;
      static_assert(cap % per_load == 0, "vectors are whole 16-byte words");
      Gathered gathered;
#pragma unroll
      for (int j = 0; j < cap; j += per_load) {
        const Vec16<Real> part = *reinterpret_cast<const Vec16<Real>*>(where + j);
        memcpy(&gathered.v[j], &part, sizeof(part));
      }
      return gathered;
    } else {
      return where;
    }
  }

 private:
  // This lane's part of a sum: its components ascending, or, in a team of fewer lanes than
  // team_width(n) (K > 1 up to n = 32: one thread for n = 5 .. 8), its slots in the order of
  // that width's butterfly, whose distances of W and more pair slots k and k + K / 2 of one
  // lane: the canonical order (lane_order_sum over the slots), so that the shuffles of sum()
  // finish it with the bits of the CPU and of the team of team_width(n) lanes.
  static constexpr bool slot_tree = K > 1 && math::team_width(cap) == cap;

  template <class F>
  __device__ Real lane_partial(F&& f) const {
    if constexpr (slot_tree) {
      return math::lane_order_sum<Real>(K, K, [&](int k) {
        const int i = lane_ + W * k;
        return i < n() ? f(math::Slot{i, k}) : Real(0);
      });
    } else {
      Real partial = 0;
      each([&](math::Slot s) { partial += f(s); });
      return partial;
    }
  }

  int n_;
  int lane_;
  unsigned mask_;
  Real* exchange_;
  Real* storage_;
  mutable int which_ = 0;
};

}  // namespace sinkgrad::cuda
