#pragma once
// The CUDA launch of the team-form CG solvers on the exact side (exact_side.hpp): one team per
// matrix (kernels/cuda/launch.cuh) on R and G as stored or, after a forward whose last step
// normalised columns, read transposed into the tiles and the gradient stored transposed back;
// the bodies store CG's final relative residual into the diagnostics where they ask for it
// (store_residual).

#include <cstdint>

#include "core/backward_problem.hpp"
#include "core/log_base_chain.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/vec16.cuh"

namespace sinkgrad::cuda {

// The entries of one row for carry_row_to_logits in one thread: RowLanes's order for
// carry_width(n) = 1, every loop unrolled to cap, so that the row's exponentials and weights,
// which the text writes where they are used, are computed once.
template <int cap>
struct OneThreadRow {
  static_assert(carry_width(cap) == 1, "a row of more entries is carried by lanes in its order");
  int n;

  template <class F>
  __device__ void each(F&& f) const {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < n) f(k);
  }

  template <class F>
  __device__ auto sum(F&& value) const -> decltype(value(0)) {
    decltype(value(0)) partial = 0;
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < n) partial += value(k);
    return partial;
  }

  template <class F>
  __device__ auto max(F&& value) const -> decltype(value(0)) {
    auto top = value(0);
#pragma unroll
    for (int k = 1; k < cap; ++k)
      if (k < n) top = math::max_of(top, value(k));
    return top;
  }
};

// Row i of matrix M (n entries, row-major) into registers, in 16-byte loads where the row is
// aligned: each thread reads rows of its own matrix, so a warp's load spans 32 rows far apart,
// and a 16-byte load brings four times the entries per request.
template <class Real, int cap>
__device__ void load_row(const Real* M, int n, int i, Real (&m)[cap]) {
  constexpr int vec = reals_per_vec16<Real>;
  const Real* row = M + i * n;
  if (cap % vec == 0 && n == cap && reinterpret_cast<std::uintptr_t>(row) % 16 == 0) {
#pragma unroll
    for (int j = 0; j < cap; j += vec) {
      const Vec16<Real> v = __ldg(reinterpret_cast<const Vec16<Real>*>(row + j));
      __builtin_memcpy(&m[j], &v, sizeof(v));
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < cap; ++j) m[j] = j < n ? __ldg(row + j) : Real(0);
}

// A team body whose gradient, dL/d(log B) in the tile, is carried to dL/dM before the block
// stores it: each lane carries its rows of the matrix as stored (tile columns when transposed)
// from the logits' row in registers. The same bits as the separate pass (core/log_base_chain.hpp),
// without reading and writing the gradient again. Every matrix is carried: a solve on the exact
// side marks none fallback.
template <class Real, class Shape, TileOrientation orientation, class Body>
struct CarriedToLogits {
  static constexpr int min_blocks_per_sm = detail::team_min_blocks<Body>();
  Body body;
  const Real* logits;
  ForwardBase base;
  Real eps;

  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const MatrixOutcome outcome = body(team, R, G, b);
    team.sync();  // a stored row may span the rows of several lanes
    const int n = team.n();
    const Real* M = logits + b * index_t(n) * n;
#pragma unroll
    for (int k = 0; k < Shape::K; ++k) {
      const int i = team.lane() + Shape::W * k;
      if (i >= n) continue;
      Real m[Shape::cap];
      load_row(M, n, i, m);
      if constexpr (orientation == TileOrientation::transposed)
        carry_row_to_logits(OneThreadRow<Shape::cap>{n}, base, eps, m, G.col(i));
      else
        carry_row_to_logits(OneThreadRow<Shape::cap>{n}, base, eps, m, G.row(i));
    }
    return outcome;
  }
};

// body_of(shape) -> the team body for that TeamShape / BlockShape. Under a forward whose base
// is no scaling of exp(M), the shapes up to one_lane_carry_max_n (those of n <= it) carry the
// body's gradient to M in the kernel (CarriedToLogits); the checked solve carries the larger n.
template <class Real, class BodyOf>
void launch_teams_on_exact_rows(const BackwardProblem<Real>& problem,
                                const BackwardResult<Real>& result, BodyOf body_of) {
  const int n = problem.grad_output.n;
  const bool carry = carries_log_base_gradient(problem.forward);
  with_orientation(last_step_normalises_columns(problem.forward.convention), [&](auto orientation) {
    // Float32 n = 5 .. 8 in one thread, as the forward: a team of 8 lanes spends most of its
    // issue slots on its exchanges. Float64 keeps the team: one thread's registers would spill.
    constexpr SmallMatrices small =
        sizeof(Real) == 4 ? SmallMatrices::one_thread_to_8 : SmallMatrices::one_thread;
    with_team_shape<small>(n, [&](auto shape) {
      using Shape = decltype(shape);
      constexpr TileOrientation tiles = decltype(orientation)::value;
      const auto launch = [&](auto body) {
        launch_teams<Real, Shape, tiles>(problem.forward_output.data, problem.grad_output.data,
                                         result.grad_logits.data, result.status, result.iterations,
                                         problem.grad_output.batch, n, body, Staging::on, 0,
                                         stream_of(problem));
      };
      if constexpr (!Shape::block && Shape::cap <= one_lane_carry_max_n) {
        if (carry)
          return launch(CarriedToLogits<Real, Shape, tiles, decltype(body_of(shape))>{
              body_of(shape), problem.logits.data, forward_recipe(problem.forward.convention).base,
              static_cast<Real>(problem.forward.eps)});
      }
      launch(body_of(shape));
    });
  });
}

// The leader stores a CG outcome's final relative residual where the diagnostics ask for it.
template <class Real, class Team>
__device__ MatrixOutcome store_residual(const Team& team, const BackwardResult<Real>& result,
                                        index_t b, MatrixOutcome outcome) {
  if (result.diagnostics.relative_residual != nullptr && team.leader())
    result.diagnostics.relative_residual[b] = Real(outcome.residual);
  return outcome;
}

}  // namespace sinkgrad::cuda
