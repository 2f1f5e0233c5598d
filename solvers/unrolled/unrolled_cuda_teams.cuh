#pragma once
// The definitions behind solvers/unrolled/unrolled_cuda_teams.hpp: the replay's team bodies over
// the tiles of kernels/cuda/launch.cuh. Included only by the unrolled_cuda_teams_*.cu units
// (generated: solvers/unrolled/CMakeLists.txt).

#include <algorithm>

#include "kernels/cuda/launch.cuh"
#include "solvers/unrolled/convention_unrolled_team.hpp"
#include "solvers/unrolled/unrolled_cuda_teams.hpp"
#include "solvers/unrolled/unrolled_team.hpp"

namespace sinkgrad::cuda::unrolled_detail {

// The logits in the first tile (TileMatrices' R accessors, from shared memory: they are read
// once, for P); G, overwritten by the gradient, in the second.
template <class Real, class Shape>
struct UnrolledTileMatrices : TileMatrices<Real, Shape, false> {
  using TileMatrices<Real, Shape, false>::TileMatrices;
  __device__ math::StridedView<Real> M_row(math::Slot s) const { return this->R_row(s); }
  __device__ math::StridedView<Real> M_col(math::Slot s) const { return this->R_col(s); }
};

template <class Real, class Shape>
struct UnrolledTeam {
  // Staging the next slice, chosen where measured (docs/performance.md): off for float64 at
  // n = 4 and 8 (its shared memory costs resident blocks that pay more than the overlap); the
  // other sizes and float32 keep it, as do n not measured.
  static constexpr Staging staging =
      sizeof(Real) == 8 && (Shape::N == 4 || Shape::N == 8) ? Staging::off : Staging::on;
  int T;
  int segment;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> M, Tile<Real> G,
                                      index_t) const {
    const UnrolledTileMatrices<Real, Shape> mats(M, G, team.lane(), team.n());
    return math::unrolled_team<Real>(team, mats, T, segment);
  }
};

// The forwards with eps and tilekernels (solvers/unrolled/convention_unrolled_team.hpp).
template <class Real, class Shape>
struct ConventionUnrolledTeam {
  // float64 at n = 5..8: a minimum of three blocks gives 162 registers without spills, so that
  // three blocks fit an SM where staging's shared memory does not hold them to two (with a
  // minimum of one, 188 registers, two blocks; with none, 160). float32 at
  // n = 5..8: left to itself 80 registers and 44 bytes of spill stores; six blocks (at most 85
  // registers) give 79 without spills, the occupancy the default's 80 registers have (ptxas,
  // sm_90).
  static constexpr int min_blocks_per_sm = Shape::cap != 8 ? 0 : sizeof(Real) == 8 ? 3 : 6;
  // Staging as UnrolledTeam's: off for float64 at n = 4, 8 and 32, where its shared memory
  // costs more resident warps than the overlap gains (at n = 32 four teams fit a block instead
  // of two; at n = 8 with the three blocks above), on at n = 16 and in float32.
  static constexpr Staging staging =
      sizeof(Real) == 8 && (Shape::N == 4 || Shape::N == 8 || Shape::N == 32) ? Staging::off
                                                                              : Staging::on;
  // The softmax base's rows of P transposed through team storage instead of n more
  // exponentials a lane, where a lane has one slot (n <= 32): its n + 1 vectors then fit under
  // the tape's capacity.
  static constexpr bool rows_through_storage = !Shape::block && Shape::K == 1;
  int T;
  int segment;
  math::ConventionForward<Real> convention;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> M, Tile<Real> G,
                                      index_t) const {
    const UnrolledTileMatrices<Real, Shape> mats(M, G, team.lane(), team.n());
    return math::convention_unrolled_team<Real>(team, mats, T, segment, convention,
                                                rows_through_storage);
  }
  // The team storage a launch asks for: the tape's `tape` Reals, or the n + 1 vectors of the
  // softmax base's transposition where those are more (short tapes, small T).
  long long storage_reals(long long tape, int n, int stride) const {
    if (!rows_through_storage || !convention.softmax_base) return tape;
    return std::max(tape, (n + 1LL) * stride);
  }
};

// Tape of the team form: 48 Reals per lane (T <= 23 keeps every step for one row per lane);
// a longer T is checkpointed into as much, or into the least a checkpointed tape needs.
constexpr long long tape_reals_per_lane = 48;

// Launches per_team(Shape) -> body for n's team shape; orientation transposed replays the
// forward of M^T with G^T and stores the gradient transposed back (rows_first, tilekernels).
// two_sided: a convention's tape (both scaling vectors of every step).
template <class Real, ShapeGroup G, class MakeBody>
void unrolled_teams(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                    bool transposed, bool two_sided, MatrixSubset subset, MakeBody make_body) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  with_orientation(transposed, [&](auto orientation) {
    with_team_shape_in<G, SmallMatrices::four_lanes, MidMatrices::block_team>(n, [&](auto shape) {
      using Shape = decltype(shape);
      const int stride = team_stride<Shape>(n);
      // The block team's tape is in global memory: as much as four matrices.
      const long long capacity = Shape::block ? 4LL * n * stride : tape_reals_per_lane * Shape::W;
      const int segment = math::unrolled_segment_or_smallest(stride, T, capacity, two_sided);
      const long long tape = math::unrolled_workspace(stride, T, segment, two_sided);
      if (!Shape::block && tape * static_cast<long long>(sizeof(Real)) > 200 * 1024) too_long(n, T);
      const auto body = make_body(shape, segment);
      long long storage = tape;
      if constexpr (requires { body.storage_reals(tape, n, stride); })
        storage = body.storage_reals(tape, n, stride);
      launch_teams<Real, Shape, decltype(orientation)::value, /*subsets=*/true>(
          problem.logits.data, problem.grad_output.data, result.grad_logits.data, result.status,
          result.iterations, problem.grad_output.batch, n, body, decltype(body)::staging,
          static_cast<int>(storage), stream_of(problem), subset);
    });
  });
}

template <class Real, ShapeGroup G>
void seeds_unrolled_group(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                          bool transposed, MatrixSubset subset) {
  const int T = problem.forward_iterations;
  unrolled_teams<Real, G>(problem, result, transposed, false, subset, [&](auto shape, int segment) {
    return UnrolledTeam<Real, decltype(shape)>{T, segment};
  });
}

template <class Real, ShapeGroup G>
void convention_unrolled_group(const BackwardProblem<Real>& problem,
                               const BackwardResult<Real>& result, bool transposed,
                               MatrixSubset subset) {
  const int T = problem.forward_iterations;
  const auto convention = math::convention_forward<Real>(problem.forward);
  unrolled_teams<Real, G>(problem, result, transposed, true, subset, [&](auto shape, int segment) {
    return ConventionUnrolledTeam<Real, decltype(shape)>{T, segment, convention};
  });
}

}  // namespace sinkgrad::cuda::unrolled_detail
