#pragma once
// The batch driver of the block team (block_team.cuh, 64 < n <= 1024), called by launch_teams
// for BlockShape: one block of n rounded up to 32 threads per matrix, as many blocks as stay
// resident (fewer when their global scratch would exceed block_scratch_budget), each working
// through the matrices blockIdx.x, blockIdx.x + gridDim.x, ... Its tiles are unpadded n x n
// matrices in the block's global scratch (a matrix of these sizes does not fit into shared
// memory), filled and stored with the team kernels' copy_tiles, transposed when asked. A subset
// (matrix_subset.hpp) runs only its matrices.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/backward_problem.hpp"
#include "kernels/cuda/block_team.cuh"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "kernels/cuda/matrix_subset.hpp"
#include "kernels/cuda/per_matrix_launch.cuh"  // resident_blocks
#include "kernels/cuda/staging.cuh"
#include "kernels/cuda/tiles.cuh"

namespace sinkgrad::cuda {

namespace detail {

// Global scratch the blocks of one launch may hold at once: 256 MiB. Every block needs
// about 7 n^2 Reals (rows, lines, tiles), 56 MiB at n = 1024 in float64; below the budget a
// launch has as many blocks as stay resident.
inline constexpr long long block_scratch_budget = 256LL << 20;

template <class Real, bool transposed, class Body>
__global__ void __launch_bounds__(1024)
    block_team_kernel(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                      std::int32_t* iterations, index_t batch, int n, long long storage_reals,
                      Real* scratch, long long block_reals, Body body, MatrixSubset subset) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Real* shared = reinterpret_cast<Real*>(shared_bytes);
  Real* mine = scratch + blockIdx.x * block_reals;
  const int nn = n * n;
  Real* tile0 = mine + block_team_scratch_reals(n, storage_reals);
  Real* tile1 = in1 != nullptr ? tile0 + (nn + 3) / 4 * 4 : tile0;
  for (index_t b = blockIdx.x; b < batch; b += gridDim.x) {
    if (!subset.selects(b)) continue;  // the same on every thread
    copy_tiles<Real, true, 0, transposed>(tile0, nn, n, const_cast<Real*>(in0) + b * nn, 1, n);
    if (in1 != nullptr)
      copy_tiles<Real, true, 0, transposed>(tile1, nn, n, const_cast<Real*>(in1) + b * nn, 1, n);
    __syncthreads();
    const CudaBlockTeam<Real> team(n, shared, mine);
    const MatrixOutcome outcome = body(team, Tile<Real>{tile0, n}, Tile<Real>{tile1, n}, b);
    if (status != nullptr && team.leader()) {
      status[b] = subset.stored(outcome.status);
      iterations[b] = outcome.iterations;
    }
    __syncthreads();
    copy_tiles<Real, false, 0, transposed>(tile1, nn, n, out + b * nn, 1, n);
    __syncthreads();  // the tiles are stored before the next matrix fills them
  }
}

}  // namespace detail

// launch_teams for BlockShape (n <= max_block_team_n, which with_team_shape checks): the same
// contract, storage_reals of team.storage() in global scratch, allocated and freed in the order of
// `stream`.
template <class Real, bool transposed, class Body>
void launch_block_teams(const Real* in0, const Real* in1, Real* out, SolveStatus* status,
                        std::int32_t* iterations, index_t batch, int n, Body body,
                        long long storage_reals, cudaStream_t stream, MatrixSubset subset = {}) {
  const int threads = (n + 31) / 32 * 32;
  const long long tile_reals = (static_cast<long long>(n) * n + 3) / 4 * 4;
  const long long block_reals =
      block_team_scratch_reals(n, storage_reals) + (in1 != nullptr ? 2 : 1) * tile_reals;
  const std::size_t shared_bytes = block_team_shared_reals(n) * sizeof(Real);
  auto kernel = &detail::block_team_kernel<Real, transposed, Body>;
  const long long block_bytes = block_reals * static_cast<long long>(sizeof(Real));
  const long long affordable = std::max(1LL, detail::block_scratch_budget / block_bytes);
  const long long resident = detail::resident_blocks(kernel, threads, shared_bytes);
  const long long blocks = std::min({static_cast<long long>(batch), resident, affordable});
  const StreamBuffer scratch(static_cast<std::size_t>(blocks * block_bytes), stream);
  kernel<<<static_cast<unsigned>(blocks), threads, shared_bytes, stream>>>(
      in0, in1, out, status, iterations, batch, n, storage_reals, scratch.as<Real>(), block_reals,
      body, subset);
  SINKGRAD_CUDA_CHECK_LAUNCH("a block team kernel");
}

}  // namespace sinkgrad::cuda
