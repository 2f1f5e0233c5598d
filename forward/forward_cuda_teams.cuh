#pragma once
// The definitions behind forward/forward_cuda_teams.hpp: the forward's team body over the
// tiles of kernels/cuda/launch.cuh. Included only by the forward_cuda_teams_*.cu units (generated:
// forward/CMakeLists.txt).

#include <type_traits>

#include "forward/convention_team.hpp"
#include "forward/forward_cuda_teams.hpp"
#include "forward/forward_team.hpp"
#include "kernels/cuda/launch.cuh"

namespace sinkgrad::cuda::forward_detail {

// The logits read from their tile (only the set-up of the linear domain and the log-domain
// fallback read them, so registers are left to P); R written over them in place (the forward
// writes R only after the team's last read of M).
template <class Real>
struct ForwardTileMatrices {
  Tile<Real> M_tile, R_tile;
  __device__ math::StridedView<Real> M_row(math::Slot s) const { return M_tile.row(s.i); }
  __device__ math::StridedView<Real> M_col(math::Slot s) const { return M_tile.col(s.i); }
  __device__ math::StridedView<Real> R_row(math::Slot s) const { return R_tile.row(s.i); }
  __device__ math::StridedView<Real> R_col(math::Slot s) const { return R_tile.col(s.i); }
};

template <class Real, class Shape, class TeamForward>
struct ForwardTeam {
  // A convention's float64 kernel at n = 9..16, left to itself, takes 166 registers and three
  // blocks a multiprocessor; a minimum of four gives it 128 (ptxas -v), and with the fourth
  // block the kernel runs faster. Not at n <= 4, where the minimum costs 118 registers instead
  // of 64 and a spill (measured: docs/performance.md).
  static constexpr int min_blocks_per_sm =
      !std::is_same_v<TeamForward, math::SeedsTeamForward<Real>> && sizeof(Real) == 8 &&
              Shape::cap == 16
          ? 4
          : 0;
  int iterations;
  Real* column_violation;
  unsigned long long* invalid_count;
  TeamForward forward;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> M, Tile<Real> R,
                                      index_t b) const {
    const ForwardTileMatrices<Real> mats{M, R};
    const auto outcome = forward(team, mats, iterations);
    if (team.leader()) {
      if (!outcome.finite && invalid_count != nullptr) atomicAdd(invalid_count, 1ULL);
      if (column_violation != nullptr) column_violation[b] = outcome.violation;
    }
    return {};
  }
};

// The team form (the seeds' or a convention's: TeamForward); orientation transposed runs it on
// every M^T and stores R transposed back (rows_first, tilekernels). The team's violation is that
// of its tile's columns: R's rows for the transposed ones, as rows_first and tilekernels report.
template <class Real, ShapeGroup G, class TeamForward>
void forward_teams(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                   Real* column_violation, unsigned long long* invalid_count, bool transposed,
                   void* stream, TeamForward forward) {
  constexpr SmallMatrices small =
      sizeof(Real) == 8 ? SmallMatrices::four_lanes : SmallMatrices::one_thread_to_8;
  with_orientation(transposed, [&](auto orientation) {
    with_team_shape_in<G, small>(logits.n, [&](auto shape) {
      using Shape = decltype(shape);
      launch_teams<Real, Shape, decltype(orientation)::value>(
          logits.data, nullptr, R.data, nullptr, nullptr, logits.batch, logits.n,
          ForwardTeam<Real, Shape, TeamForward>{iterations, column_violation, invalid_count,
                                                forward},
          Staging::on, TeamForward::storage_vectors * team_stride<Shape>(logits.n),
          static_cast<cudaStream_t>(stream));
    });
  });
}

template <class Real, ShapeGroup G>
void seeds_forward_group(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, unsigned long long* invalid_count, bool transposed,
                         void* stream) {
  forward_teams<Real, G>(logits, iterations, R, column_violation, invalid_count, transposed, stream,
                         math::SeedsTeamForward<Real>{});
}

template <class Real, ShapeGroup G>
void convention_forward_group(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                              Real* column_violation, unsigned long long* invalid_count,
                              const ForwardSpec& forward, bool transposed, void* stream) {
  forward_teams<Real, G>(
      logits, iterations, R, column_violation, invalid_count, transposed, stream,
      math::ConventionTeamForward<Real>{math::convention_forward<Real>(forward)});
}

}  // namespace sinkgrad::cuda::forward_detail
