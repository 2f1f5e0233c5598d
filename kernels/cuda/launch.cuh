#pragma once
// The batch driver of the team-form algorithms: one launch of as many blocks as fit on the
// device, each block of up to 128 threads holding 128 / W teams and working through slices of
// as many matrices, which are contiguous in memory. A slice is moved (staged ahead when the
// driver asks, staging.cuh) into padded tiles (tiles.cuh), each lane may take its rows and
// columns of the first input into registers, the team runs the algorithm, writes its output
// rows into the second tile (over its input in the first, when the kernel has one input), and
// the block stores the tiles with coalesced 16-byte stores. Global memory is touched once per
// input and output. Above n = 64 (BlockShape) the same bodies run on the block team of
// block_launch.cuh instead: a block per matrix, its tiles in global scratch.

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/backward_problem.hpp"
#include "core/error.hpp"
#include "kernels/cuda/block_launch.cuh"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/listed_slices.cuh"
#include "kernels/cuda/matrix_subset.hpp"
#include "kernels/cuda/per_matrix_launch.cuh"  // resident_blocks
#include "kernels/cuda/staging.cuh"
#include "kernels/cuda/staging_policy.hpp"
#include "kernels/cuda/stream.cuh"
#include "kernels/cuda/team.cuh"
#include "kernels/cuda/team_shape.cuh"
#include "kernels/cuda/tiles.cuh"

namespace sinkgrad::cuda {

// The team a body of launch_teams receives for Shape.
template <class Real, class Shape>
using TeamFor = std::conditional_t<Shape::block, CudaBlockTeam<Real>, CudaTeam<Real, Shape>>;

// The team's stride() for n, as the host sizes team storage with it.
template <class Shape>
int team_stride(int n) {
  if constexpr (Shape::block)
    return block_team_stride(n);
  else
    return Shape::cap;
}

// The residual history row of matrix b, or null when none is recorded.
template <class Real>
__device__ Real* history_row(const BackwardResult<Real>& result, index_t b) {
  return result.residual_history != nullptr ? result.residual_history + b * result.history_stride
                                            : nullptr;
}

// How the tiles hold a slice's matrices. transposed: every input is loaded transposed and the
// output stored transposed back (staging.cuh, copy_tiles), so that a body written for one side
// of a problem solves the other: rows_first is columns_first on M^T, transposed, and a plain
// system that eliminates the rows takes R^T when R's columns are the exact side.
enum class TileOrientation { as_stored, transposed };

// Calls f(std::integral_constant<TileOrientation, ...>{}) with transposed when asked: a body
// that can run either way is compiled both ways.
template <class F>
void with_orientation(bool transposed, F&& f) {
  if (transposed)
    f(std::integral_constant<TileOrientation, TileOrientation::transposed>{});
  else
    f(std::integral_constant<TileOrientation, TileOrientation::as_stored>{});
}

namespace detail {

// The blocks of a body's team_kernel that must fit on a multiprocessor at once (the second
// argument of __launch_bounds__): Body::min_blocks_per_sm where the body has one, else 0, which
// leaves ptxas its own choice (it gives no .minnctapersm).
template <class Body>
constexpr int team_min_blocks() {
  if constexpr (requires { Body::min_blocks_per_sm; })
    return Body::min_blocks_per_sm;
  else
    return 0;
}

// One team per matrix; each block works through the slices of `teams` matrices blockIdx.x,
// blockIdx.x + gridDim.x, ... and, when staged, stages the next slice's inputs while it computes
// on this one (otherwise it reads each slice from global memory when it gets to it).
// in0 -> tile 0; in1 -> tile 1; tile 1 -> out. in1 null: tile 1 is tile 0 (the body writes
// its output over its input). body(team, tile0, tile1, b) -> MatrixOutcome; the leader stores
// it when status is not null. Each team gets storage_reals (team_storage_reals) of scratch,
// team.storage(). orientation: the tiles hold the matrices as stored or transposed. listed: the
// kernel runs a subset (never staged; a compile-time choice, so that the whole-batch kernel
// carries none of it): only its matrices, in the slices ListedSlices hands out, each read from
// and stored to its own place.
template <class Real, class Shape, TileOrientation orientation, bool listed, class Body>
__global__ void __launch_bounds__(team_block_threads, team_min_blocks<Body>())
    team_kernel(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                std::int32_t* iterations, index_t batch, int n, int storage_reals, bool staged,
                Body body, MatrixSubset subset) {
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
  Real* storage = exchange + TeamExchange<Shape>::reals(teams);
  Real* tiles0 = storage + teams * storage_reals;
  Real* tiles1 = in1 != nullptr ? tiles0 + teams * tile_reals : tiles0;
  Real* staging0 = tiles0 + layout.tiles_total(teams);
  Real* staging1 = staging0 + layout.staging_reals(teams);
  const index_t nn = index_t(n) * n;
  constexpr bool transposed = orientation == TileOrientation::transposed;
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
  // Runs the teams of the `count` matrices in the tiles; matrix(t): team t's place in the batch.
  const auto solve = [&](int count, auto matrix) {
    if (team_index >= count) return;
    CudaTeam<Real, Shape> team(n, lane, mask, exchange + TeamExchange<Shape>::offset(team_index),
                               storage + team_index * storage_reals);
    const index_t b = matrix(team_index);
    const MatrixOutcome outcome = body(team, Tile<Real>{tiles0 + team_index * tile_reals, stride},
                                       Tile<Real>{tiles1 + team_index * tile_reals, stride}, b);
    if (status != nullptr && team.leader()) {
      status[b] = listed ? subset.stored(outcome.status) : outcome.status;
      iterations[b] = outcome.iterations;
    }
  };

  if constexpr (listed) {
    __shared__ index_t list[listed_capacity(team_block_threads, team_block_threads)];
    __shared__ int counters[2];
    ListedSlices slices(subset, batch, list, counters);
    while (const int count = slices.next(teams)) {
      copy_listed_tiles<Real, true, Shape::N, transposed>(tiles0, tile_reals, stride,
                                                          const_cast<Real*>(in0), list, count, n);
      if (in1 != nullptr)
        copy_listed_tiles<Real, true, Shape::N, transposed>(tiles1, tile_reals, stride,
                                                            const_cast<Real*>(in1), list, count, n);
      __syncthreads();
      solve(count, [&](int t) { return list[t]; });
      __syncthreads();
      copy_listed_tiles<Real, false, Shape::N, transposed>(tiles1, tile_reals, stride, out, list,
                                                           count, n);
    }
    return;
  }

  const index_t slices = (batch + teams - 1) / teams;
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
    copy_tiles<Real, true, Shape::N, transposed>(tiles0, tile_reals, stride, from0, count, n);
    if (in1 != nullptr)
      copy_tiles<Real, true, Shape::N, transposed>(tiles1, tile_reals, stride, from1, count, n);
    __syncthreads();  // tiles complete, staging free
    const index_t next = slice + gridDim.x;
    if (staged && next < slices) stage(next);
    solve(count, [&](int t) { return slice * teams + t; });
    __syncthreads();
    copy_tiles<Real, false, Shape::N, transposed>(tiles1, tile_reals, stride,
                                                  out + slice * teams * nn, count, n);
    if (next >= slices) break;
    slice = next;
  }
}

template <class Shape>
std::size_t team_shared_bytes(int teams, int n, int storage_reals, bool two_inputs, bool staged,
                              std::size_t real_size) {
  return real_size * TeamLayout<Shape>(n, storage_reals, two_inputs, staged).block_reals(teams);
}

// launch_teams for the warp teams (TeamShape): tiles, staging and storage in shared memory.
template <class Real, class Shape, TileOrientation orientation, bool listed, class Body>
void launch_warp_teams(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                       std::int32_t* iterations, index_t batch, int n, Body body, Staging staging,
                       int storage_reals, cudaStream_t stream, MatrixSubset subset) {
  storage_reals = team_storage_reals<Shape>(storage_reals);
  auto kernel = &team_kernel<Real, Shape, orientation, listed, Body>;
  const bool staged = !listed && staging_or_override(staging) == Staging::on;
  const std::size_t limit = shared_memory_per_block();
  int teams = team_block_threads / Shape::W;
  const bool two_inputs = in1 != nullptr;
  const auto shared_bytes = [&](int teams) {
    return team_shared_bytes<Shape>(teams, n, storage_reals, two_inputs, staged, sizeof(Real));
  };
  while (teams > 1 && shared_bytes(teams) > limit / 2) teams /= 2;
  const std::size_t bytes = shared_bytes(teams);
  // The listed form's list is static shared memory on top.
  const std::size_t list_bytes =
      listed ? listed_capacity(team_block_threads, team_block_threads) * sizeof(index_t) +
                   2 * sizeof(int)
             : 0;
  if (bytes + list_bytes > limit)
    throw Error("n = " + std::to_string(n) + " needs " + std::to_string(bytes) +
                " bytes of shared memory per matrix, more than a CUDA block has");
  if (bytes + list_bytes > 48 * 1024)  // static and dynamic together above the default
    allow_dynamic_shared(reinterpret_cast<const void*>(kernel), bytes);
  // As many blocks as stay resident at once, each working through its share of the slices
  // (so that every block has a next slice to stage while it computes).
  const index_t slices = (batch + teams - 1) / teams;
  const index_t resident = resident_blocks(kernel, teams * Shape::W, bytes);
  const index_t blocks = slices < resident ? slices : resident;
  kernel<<<static_cast<unsigned>(blocks), teams * Shape::W, bytes, stream>>>(
      in0, in1, out, status, iterations, batch, n, storage_reals, staged, body, subset);
  SINKGRAD_CUDA_CHECK_LAUNCH("a team kernel");
}

}  // namespace detail

// Runs body on every matrix of a batch (device pointers, row-major [B][n][n]) with
// storage_reals of team storage, in one launch of as many blocks as fit on the device at once.
// Shape must match n (with_team_shape); throws Error when a warp team's tiles and storage exceed
// a block's shared memory. The launch goes to `stream` and returns without waiting. orientation
// transposed: body sees every input transposed and its output is stored transposed back. A
// subset (matrix_subset.hpp) runs only its matrices (batch is then the whole batch's size);
// only a launch that may be given one instantiates that form (subsets = true).
template <class Real, class Shape, TileOrientation orientation = TileOrientation::as_stored,
          bool subsets = false, class Body>
void launch_teams(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                  std::int32_t* iterations, index_t batch, int n, Body body, Staging staging,
                  int storage_reals = 0, cudaStream_t stream = nullptr, MatrixSubset subset = {}) {
  if (batch <= 0) return;
  if constexpr (Shape::block) {  // the block team reads each matrix once, unstaged
    launch_block_teams<Real, orientation == TileOrientation::transposed>(
        in0, in1, out, status, iterations, batch, n, body, storage_reals, stream, subset);
  } else if constexpr (subsets) {
    if (!subset.whole())
      return detail::launch_warp_teams<Real, Shape, orientation, true>(
          in0, in1, out, status, iterations, batch, n, body, staging, storage_reals, stream,
          subset);
    detail::launch_warp_teams<Real, Shape, orientation, false>(
        in0, in1, out, status, iterations, batch, n, body, staging, storage_reals, stream, {});
  } else {
    if (!subset.whole()) throw Error("this team launch takes no subset");
    detail::launch_warp_teams<Real, Shape, orientation, false>(
        in0, in1, out, status, iterations, batch, n, body, staging, storage_reals, stream, {});
  }
}

}  // namespace sinkgrad::cuda
