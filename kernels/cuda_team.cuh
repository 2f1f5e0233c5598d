#pragma once
// The GPU team of core/team.hpp and the batch driver of the team-form algorithms.
//
// A team is W consecutive lanes of one warp (W = team_width(n): 8, 16 or 32) working on one
// matrix; lane l owns rows l, l + W (K = 1 or 2 slots). For n <= 4 a team is a single thread
// (W = 1, K = 4) that owns the whole matrix in registers: every matrix-vector product is then
// four independent dot products in one thread, no lane waits for another, and a warp works on
// 32 matrices at once (a 4-lane team spends most of its time in the latency of its exchanges).
// Kernels that would hold too much per thread that way keep 4 lanes, and the float32 forward
// runs n <= 8 in one thread too (with_team_shape).
// A block of up to 128 threads holds 128 / W teams and works through slices of as many
// matrices, which are contiguous in memory. When the driver asks for staging, the next slice's
// inputs are copied into a shared staging area with asynchronous 16-byte copies (cp.async)
// while the block computes on this one, so that the memory system is kept busy during the
// arithmetic. A slice is then moved from staging (or global memory) into padded tiles (a matrix per
// team, rows padded to n + 1 so that lanes reading a row or a column hit distinct banks; for W = 1,
// tiles of an odd number of words, so that the threads reading the same entry of their own matrices
// do), each lane may take its rows and columns of the first input into registers (K = 1 or W = 1;
// for K = 2 they stay in shared memory), the team runs the algorithm, writes its output rows into
// the second tile (over its input in the first, when the kernel has one input), and the block
// stores the tiles with coalesced 16-byte stores. Global memory is touched once per input and
// output.
//
// Teams exchange vectors through a small per-team buffer in shared memory (share()) and reduce
// with xor shuffles inside their W lanes (sum()), in the canonical order of team.hpp.

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/backward_problem.hpp"
#include "core/error.hpp"
#include "core/team.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_team_staging.hpp"

namespace sinkgrad::cuda {

// The compile-time shape of a team: W lanes, K slots per lane, and n itself when it is fixed
// (N > 0: the sizes common in practice get index arithmetic and loops without run-time n).
template <int W_, int K_, int N_ = 0>
struct TeamShape {
  static constexpr int W = W_;
  static constexpr int K = K_;
  static constexpr int N = N_;
  static constexpr int cap = W_ * K_;
};

template <class Real, class Shape>
class CudaTeam {
 public:
  static constexpr int W = Shape::W;
  static constexpr int K = Shape::K;
  static constexpr int cap = Shape::cap;
  static constexpr bool columns_from_rows = W == 1;  // the whole matrix in registers

  struct Vec {
    Real v[K];
    __device__ Real& operator[](math::Slot s) { return v[s.k]; }
    __device__ const Real& operator[](math::Slot s) const { return v[s.k]; }
  };

  // exchange: 2 cap Reals of shared memory private to the team; storage: the team's scratch
  // (16-byte aligned, whole vectors of cap Reals).
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
    Real partial = 0;
    each([&](math::Slot s) { partial += f(s); });
#pragma unroll
    for (int distance = W / 2; distance > 0; distance /= 2)
      partial = partial + __shfl_xor_sync(mask_, partial, distance, W);
    return partial;
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
  template <class F>
  __device__ Real broadcast(int i, F&& f) const {
    const Real v = f(math::Slot{i, i / W});
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
    Real* buffer = exchange_ + which_ * cap;
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
      constexpr int per_load = 16 / sizeof(Real);
      using Vec16 = typename std::conditional<sizeof(Real) == 4, float4, double2>::type;
      static_assert(cap % per_load == 0, "vectors are whole 16-byte words");
      Gathered gathered;
#pragma unroll
      for (int j = 0; j < cap; j += per_load) {
        const Vec16 part = *reinterpret_cast<const Vec16*>(where + j);
        memcpy(&gathered.v[j], &part, sizeof(part));
      }
      return gathered;
    } else {
      return where;
    }
  }

 private:
  int n_;
  int lane_;
  unsigned mask_;
  Real* exchange_;
  Real* storage_;
  mutable int which_ = 0;
};

// A matrix in a shared-memory tile, rows padded to `stride` Reals.
template <class Real>
struct Tile {
  Real* data;
  int stride;
  __device__ math::StridedView<Real> row(int i) const { return {data + i * stride, 1}; }
  __device__ math::StridedView<Real> col(int j) const { return {data + j, stride}; }
};

// The rows and columns a lane owns (i = lane + W k, k < K) of a tile, in registers. A
// one-thread team (W = 1) holds every row and reads the columns out of them.
template <class Real, class Shape>
struct RowsAndColumns {
  static constexpr bool columns_from_rows = Shape::W == 1;
  using Rows = typename CudaTeam<Real, Shape>::Rows;
  Rows row;
  Rows col;  // unused when columns_from_rows
  __device__ RowsAndColumns(Tile<Real> tile, int lane, int n) {
#pragma unroll
    for (int k = 0; k < Shape::K; ++k) {
      const int i = lane + Shape::W * k;
#pragma unroll
      for (int j = 0; j < Shape::cap; ++j) {
        row.v[k][j] = i < n && j < n ? tile.data[i * tile.stride + j] : Real(0);
        if constexpr (!columns_from_rows)
          col.v[k][j] = i < n && j < n ? tile.data[j * tile.stride + i] : Real(0);
      }
    }
  }
  __device__ const Real (&operator[](math::Slot s) const)[Shape::cap] {
    return row[s];
  }
  __device__ decltype(auto) column(math::Slot s) const {
    if constexpr (columns_from_rows)
      return math::ColumnOfRows<Rows>{row, s.k};
    else
      return col[s];
  }
};

// The Matrices of the implicit solvers on the GPU: R (first tile), G and the gradient (second
// tile, overwritten in place row by row at the end). K = 1 or W = 1: R's rows and columns in
// registers.
template <class Real, class Shape, bool in_registers = Shape::K == 1 || Shape::W == 1>
struct TileMatrices {
  Tile<Real> R_tile, G_tile;
  __device__ TileMatrices(Tile<Real> r, Tile<Real> g, int, int) : R_tile(r), G_tile(g) {}
  __device__ math::StridedView<Real> R_row(math::Slot s) const { return R_tile.row(s.i); }
  __device__ math::StridedView<Real> R_col(math::Slot s) const { return R_tile.col(s.i); }
  __device__ math::StridedView<Real> G_row(math::Slot s) const { return G_tile.row(s.i); }
  __device__ math::StridedView<Real> G_col(math::Slot s) const { return G_tile.col(s.i); }
  __device__ math::StridedView<Real> grad_row(math::Slot s) const { return G_tile.row(s.i); }
};

template <class Real, class Shape>
struct TileMatrices<Real, Shape, true> {
  RowsAndColumns<Real, Shape> R;
  Tile<Real> G_tile;
  __device__ TileMatrices(Tile<Real> r, Tile<Real> g, int lane, int n) : R(r, lane, n), G_tile(g) {}
  __device__ const Real (&R_row(math::Slot s) const)[Shape::cap] { return R[s]; }
  __device__ decltype(auto) R_col(math::Slot s) const { return R.column(s); }
  __device__ math::StridedView<Real> G_row(math::Slot s) const { return G_tile.row(s.i); }
  __device__ math::StridedView<Real> G_col(math::Slot s) const { return G_tile.col(s.i); }
  __device__ math::StridedView<Real> grad_row(math::Slot s) const { return G_tile.row(s.i); }
};

namespace detail {

inline constexpr int team_block_threads = 128;

// Shared memory of one team, in Reals: its exchange buffers (none for W = 1), storage and its
// tiles, two, or one when there is a single input that the output overwrites in place (see the
// top of this file for the padding).
template <class Shape>
struct TeamLayout {
  int n;
  int stride;
  int tile_reals;
  int tiles;  // also the number of inputs
  int exchange_reals;
  int storage_reals;
  bool staged;  // with staging for the next slice's inputs
  __host__ __device__ TeamLayout(int n, int storage, bool two_inputs, bool staged)
      : n(n),
        stride(Shape::W == 1 ? n : n + 1),
        tile_reals(Shape::W == 1 ? (n * n) | 1 : n * (n + 1)),
        tiles(two_inputs ? 2 : 1),
        exchange_reals(Shape::W == 1 ? 0 : 2 * Shape::cap),
        storage_reals(storage),
        staged(staged) {}
  // The tiles of `teams` teams, rounded up to whole 16-byte words.
  __host__ __device__ std::size_t tiles_total(int teams) const {
    return (std::size_t(teams) * tiles * tile_reals + 3) / 4 * 4;
  }
  // The staging of one input: teams matrices, contiguous.
  __host__ __device__ std::size_t staging_reals(int teams) const {
    return (std::size_t(teams) * n * n + 3) / 4 * 4;
  }
  __host__ __device__ std::size_t block_reals(int teams) const {
    return std::size_t(teams) * (std::size_t(exchange_reals) + std::size_t(storage_reals)) +
           tiles_total(teams) + (staged ? std::size_t(tiles) * staging_reals(teams) : 0);
  }
};

// Starts copying count * n^2 Reals of a contiguous batch slice from global memory into
// staging (16-byte aligned) without waiting for them (cp.async: the copy lands while the
// block computes on the previous slice); 16-byte copies when the slice is aligned.
template <class Real>
__device__ void stage_async(Real* staging, const Real* global, int total) {
  constexpr int vec = 16 / sizeof(Real);
  int done = 0;
  if (reinterpret_cast<std::uintptr_t>(global) % 16 == 0) {
    done = total / vec * vec;
    for (int e = threadIdx.x * vec; e < done; e += blockDim.x * vec)
      __pipeline_memcpy_async(staging + e, global + e, 16);
  }
  for (int e = done + threadIdx.x; e < total; e += blockDim.x)
    __pipeline_memcpy_async(staging + e, global + e, sizeof(Real));
  __pipeline_commit();
}

// Moves count matrices between contiguous n x n storage (shared staging, or global memory) and
// padded tiles (tile m starts at tiles + m * tile_reals), with 16-byte accesses to the
// contiguous side when n allows. to_tiles: contiguous -> tiles, else tiles -> contiguous
// (streaming stores: the output is not read again).
template <class Real, bool to_tiles, int fixed_n>
__device__ void copy_tiles(Real* tiles, int tile_reals, int stride, Real* contiguous, int count,
                           int n) {
  if constexpr (fixed_n > 0) n = fixed_n;
  constexpr int vec = 16 / sizeof(Real);
  using Vec16 = typename std::conditional<sizeof(Real) == 4, float4, double2>::type;
  // Unsigned index arithmetic: a signed division by a constant costs twice the instructions.
  const unsigned un = n, nn = un * un, total = unsigned(count) * nn;
  const auto tile_entry = [&](unsigned e) {  // entry e of the contiguous side, in its tile
    const unsigned m = e / nn, r = e - m * nn, row = r / un, col = r - row * un;
    return tiles + m * tile_reals + row * stride + col;
  };
  const bool vectorised = n % vec == 0 && reinterpret_cast<std::uintptr_t>(contiguous) % 16 == 0;
  if (vectorised) {
    for (unsigned e = threadIdx.x * vec; e < total; e += blockDim.x * vec) {
      Real* t = tile_entry(e);
      auto* c = reinterpret_cast<Vec16*>(contiguous + e);
      Real part[vec];
      if constexpr (to_tiles) {
        const Vec16 v = *c;
        static_assert(sizeof(Vec16) == sizeof(part));
        memcpy(part, &v, sizeof(v));
#pragma unroll
        for (int q = 0; q < vec; ++q) t[q] = part[q];
      } else {
#pragma unroll
        for (int q = 0; q < vec; ++q) part[q] = t[q];
        Vec16 v;
        memcpy(&v, part, sizeof(v));
        __stcs(c, v);
      }
    }
  } else {
    for (unsigned e = threadIdx.x; e < total; e += blockDim.x) {
      Real* t = tile_entry(e);
      if constexpr (to_tiles)
        *t = contiguous[e];
      else
        __stcs(contiguous + e, *t);
    }
  }
}

// One team per matrix; each block works through the slices of `teams` matrices blockIdx.x,
// blockIdx.x + gridDim.x, ... and, when staged, stages the next slice's inputs while it computes
// on this one (otherwise it reads each slice from global memory when it gets to it).
// in0 -> tile 0; in1 -> tile 1; tile 1 -> out. in1 null: tile 1 is tile 0 (the body writes
// its output over its input). body(team, tile0, tile1, b) -> MatrixOutcome; the leader stores
// it when status is not null. Each team gets storage_reals (a multiple of 4) of scratch,
// team.storage().
template <class Real, class Shape, class Body>
__global__ void __launch_bounds__(team_block_threads)
    team_kernel(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                std::int32_t* iterations, index_t batch, int n, int storage_reals, bool staged,
                Body body) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  constexpr int W = Shape::W;
  if constexpr (Shape::N > 0) n = Shape::N;
  const int teams = blockDim.x / W;
  const TeamLayout<Shape> layout(n, storage_reals, in1 != nullptr, staged);
  const int stride = layout.stride;
  const int tile_reals = layout.tile_reals;
  // Layout: exchange buffers of every team, storage, tiles 0, tiles 1, then the staging of
  // each input (everything 16-byte aligned but the tiles, whose total is rounded up).
  Real* exchange = reinterpret_cast<Real*>(shared_bytes);
  Real* storage = exchange + teams * layout.exchange_reals;
  Real* tiles0 = storage + teams * storage_reals;
  Real* tiles1 = in1 != nullptr ? tiles0 + teams * tile_reals : tiles0;
  Real* staging0 = tiles0 + layout.tiles_total(teams);
  Real* staging1 = staging0 + layout.staging_reals(teams);
  const index_t slices = (batch + teams - 1) / teams;
  const index_t nn = index_t(n) * n;
  const auto slice_size = [&](index_t slice) {
    return static_cast<int>(batch - slice * teams < teams ? batch - slice * teams : teams);
  };
  const auto stage = [&](index_t slice) {
    const int total = slice_size(slice) * static_cast<int>(nn);
    stage_async(staging0, in0 + slice * teams * nn, total);
    if (in1 != nullptr) stage_async(staging1, in1 + slice * teams * nn, total);
  };

  const int team_index = threadIdx.x / W;
  const int lane = threadIdx.x % W;
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << ((threadIdx.x % 32) / W * W);
  index_t slice = blockIdx.x;
  if (slice >= slices) return;
  if (staged) stage(slice);
  while (true) {
    const int count = slice_size(slice);
    Real* from0 = const_cast<Real*>(in0) + slice * teams * nn;
    Real* from1 = in1 != nullptr ? const_cast<Real*>(in1) + slice * teams * nn : nullptr;
    if (staged) {
      __pipeline_wait_prior(0);
      from0 = staging0;
      from1 = staging1;
    }
    __syncthreads();  // the staged slice has landed; the last slice's tiles are stored
    copy_tiles<Real, true, Shape::N>(tiles0, tile_reals, stride, from0, count, n);
    if (in1 != nullptr)
      copy_tiles<Real, true, Shape::N>(tiles1, tile_reals, stride, from1, count, n);
    __syncthreads();  // tiles complete, staging free
    const index_t next = slice + gridDim.x;
    if (staged && next < slices) stage(next);

    if (team_index < count) {
      CudaTeam<Real, Shape> team(n, lane, mask, exchange + team_index * layout.exchange_reals,
                                 storage + team_index * storage_reals);
      const index_t b = slice * teams + team_index;
      const MatrixOutcome outcome = body(team, Tile<Real>{tiles0 + team_index * tile_reals, stride},
                                         Tile<Real>{tiles1 + team_index * tile_reals, stride}, b);
      if (status != nullptr && team.leader()) {
        status[b] = outcome.status;
        iterations[b] = outcome.iterations;
      }
    }
    __syncthreads();
    copy_tiles<Real, false, Shape::N>(tiles1, tile_reals, stride, out + slice * teams * nn, count,
                                      n);
    if (next >= slices) break;
    slice = next;
  }
}

template <class Shape>
std::size_t team_shared_bytes(int teams, int n, int storage_reals, bool two_inputs, bool staged,
                              std::size_t real_size) {
  return real_size * TeamLayout<Shape>(n, storage_reals, two_inputs, staged).block_reals(teams);
}

}  // namespace detail

// Runs body on every matrix of a batch (device pointers, row-major [B][n][n]) with
// storage_reals of team storage, in one launch of as many blocks as fit on the device at once.
// Shape must match n (with_team_shape); throws Error when a team's tiles and storage exceed a
// block's shared memory.
template <class Real, class Shape, class Body>
void launch_teams(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                  std::int32_t* iterations, index_t batch, int n, Body body, Staging staging,
                  int storage_reals = 0) {
  if (batch <= 0) return;
  storage_reals = (storage_reals + 3) / 4 * 4;  // keeps tiles and later storage 16-byte aligned
  auto kernel = &detail::team_kernel<Real, Shape, Body>;
  const bool staged = detail::staging_or_override(staging) == Staging::on;
  int device = 0;
  SINKGRAD_CUDA_CHECK(cudaGetDevice(&device));
  int limit = 0;
  SINKGRAD_CUDA_CHECK(
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  int teams = detail::team_block_threads / Shape::W;
  const bool two_inputs = in1 != nullptr;
  const auto shared_bytes = [&](int teams) {
    return detail::team_shared_bytes<Shape>(teams, n, storage_reals, two_inputs, staged,
                                            sizeof(Real));
  };
  while (teams > 1 && shared_bytes(teams) > std::size_t(limit) / 2) teams /= 2;
  const std::size_t bytes = shared_bytes(teams);
  if (bytes > std::size_t(limit))
    throw Error("n = " + std::to_string(n) + " needs " + std::to_string(bytes) +
                " bytes of shared memory per matrix, more than a CUDA block has");
  if (bytes > 48 * 1024)
    SINKGRAD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes)));
  // As many blocks as stay resident at once, each working through its share of the slices
  // (so that every block has a next slice to stage while it computes).
  int per_multiprocessor = 0, multiprocessors = 0;
  SINKGRAD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel,
                                                                    teams * Shape::W, bytes));
  SINKGRAD_CUDA_CHECK(
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const index_t slices = (batch + teams - 1) / teams;
  const index_t resident =
      index_t(per_multiprocessor > 0 ? per_multiprocessor : 1) * multiprocessors;
  const index_t blocks = slices < resident ? slices : resident;
  kernel<<<static_cast<unsigned>(blocks), teams * Shape::W, bytes>>>(
      in0, in1, out, status, iterations, batch, n, storage_reals, staged, body);
  SINKGRAD_CUDA_CHECK_LAUNCH("a team kernel");
}

// How a kernel lays out the smallest matrices. one_thread: n <= 4 in one thread (the shape
// team_width gives). four_lanes: n <= 4 on four lanes, each owning a row, for the kernels whose
// one-thread form holds too much per thread (the unrolled replay's tape, float64 registers);
// the result is the same up to the order of its sums. one_thread_to_8: n <= 8 in one thread
// too, for kernels that keep little more than the matrix itself in registers (the float32
// forward: 64 entries of P), where a team of 8 lanes spends most of its issue slots on its
// exchanges.
enum class SmallMatrices { one_thread, four_lanes, one_thread_to_8 };

// Calls launch(TeamShape<W, K, N>{}) with the shape team_width(n) gives, or the one `small`
// asks for; n <= max_team_n.
template <SmallMatrices small = SmallMatrices::one_thread, class Launch>
void with_team_shape(int n, Launch&& launch) {
  if constexpr (small == SmallMatrices::one_thread_to_8) {
    if (n > 4 && n <= 8) {
      if (n == 8)
        launch(TeamShape<1, 8, 8>{});
      else
        launch(TeamShape<1, 8>{});
      return;
    }
  }
  if (n <= 4) {
    if constexpr (small == SmallMatrices::four_lanes) {
      if (n == 4)
        launch(TeamShape<4, 1, 4>{});
      else
        launch(TeamShape<4, 1>{});
    } else {
      if (n == 4)
        launch(TeamShape<1, 4, 4>{});
      else
        launch(TeamShape<1, 4>{});
    }
  } else if (n == 8)
    launch(TeamShape<8, 1, 8>{});
  else if (n < 8)
    launch(TeamShape<8, 1>{});
  else if (n == 16)
    launch(TeamShape<16, 1, 16>{});
  else if (n < 16)
    launch(TeamShape<16, 1>{});
  else if (n == 32)
    launch(TeamShape<32, 1, 32>{});
  else if (n < 32)
    launch(TeamShape<32, 1>{});
  else if (n <= math::max_team_n)
    launch(TeamShape<32, 2>{});
  else
    throw Error("n = " + std::to_string(n) + " is above the " + std::to_string(math::max_team_n) +
                " that the CUDA variants support");
}

}  // namespace sinkgrad::cuda
