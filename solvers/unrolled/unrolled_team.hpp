#pragma once
// `unrolled` in team form (kernels/team.hpp): the exact derivative of the T-step forward of
// forward/forward_team.hpp, run by the CPU and the GPU (n <= 1024).
//
// Linear domain (the forward's own: X_t = diag(a_t) P diag(b_t), P = exp(M - column maxima)).
// The forward step t computes u = P^T a_{t-1}, b_t = 1 / u, v = P b_t, a_t = 1 / v, and
// R = diag(a_T) P diag(b_T). With adjoints ā, b̄ and P̄ (of a, b and P), reversing step t is
//     ȳ = -ā ⊙ a_t²          (adjoint of v)
//     b̄ += P^T ȳ,   z̄ = -b̄ ⊙ b_t²   (adjoint of u)
//     ā = P z̄,      P̄ += ȳ b_t^T + a_{t-1} z̄^T
// from ā = (G ⊙ P) b_T, b̄ = (G ⊙ P)^T a_T, P̄ = G ⊙ a_T b_T^T, and dL/dM = P ⊙ P̄ (the column
// maxima drop out: R does not change when a column of M is shifted). Per step that is four
// matrix-vector products and two rank-one updates, 6 n^2 multiply-adds with the forward
// replay, and no exponential.
//
// Log domain (the forward's fallback for widely spread logits, and the fallback here when a
// linear-domain gradient overflows): the adjoint W = X ⊙ dL/dX of every iterate, reversed as in
// convention_unrolled.hpp (row normalisation: W -= X_t ⊙ (W 1) 1^T; column normalisation:
// W -= Y_t ⊙ 1 (1^T W)), with 2 n^2 exponentials per step.
//
// Both replay the forward from a tape of the row-side and column-side vectors (a and b, or the
// potentials f and g) in team storage: every vector when they fit, otherwise checkpoints every
// L steps and one recomputed segment of L steps at a time (unrolled_workspace).

#include "forward/forward_team.hpp"
#include "kernels/team_fail.hpp"
#include "solvers/unrolled/replay_tape.hpp"

namespace sinkgrad::math {

// Reverses linear-domain step t (ā = a_bar and b̄ = b_bar of a_t and b_t in, those of a_{t-1}
// and b_{t-1} out; P̄ accumulated):
//     ȳ = row(s, -ā ⊙ a_t²),  z̄ = column(s, b̄ + P^T ȳ),  ā = P z̄,  P̄ += ȳ b_t^T + a_{t-1} z̄^T.
// row and column return the adjoints of the row and column sums (column also sets b̄_{t-1}[s]):
// the seeds' forward's own terms, or with those of eps (convention_unrolled_team.hpp).
// Without columns (a step of a row half only: tilekernels' first), P̄ += ȳ b_t^T is all; its
// ā_{t-1} is not used.
template <class Real, bool columns = true, class Team, class Rows, class Columns, class AllB,
          class Row, class Column>
SINKGRAD_HD void linear_step_back(const Team& team, const Rows& P, const Columns& Pt, Rows& Pbar,
                                  typename Team::Vec& a_bar, typename Team::Vec& b_bar,
                                  const typename Team::Vec& a, const AllB& all_b,
                                  const typename Team::Vec& a_prev, Row&& row, Column&& column) {
  const int n = team.n();
  typename Team::Vec y_bar, z_bar;
  team.each([&](Slot s) { y_bar[s] = row(s, -a_bar[s] * a[s] * a[s]); });
  if constexpr (!columns) {
    team.each([&](Slot s) {
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        Pbar[s][j] += y_bar[s] * all_b[j];
      }
    });
    return;
  }
  const auto& all_y = team.share(y_bar);
  team.each([&](Slot s) { z_bar[s] = column(s, b_bar[s] + dot_n<Team::cap>(Pt[s], all_y, n)); });
  const auto& all_z = team.share(z_bar);
  team.each([&](Slot s) {
    a_bar[s] = dot_n<Team::cap>(P[s], all_z, n);
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      Pbar[s][j] += y_bar[s] * all_b[j] + a_prev[s] * all_z[j];
    }
  });
}

// The linear-domain replay: u = a, v = b; adjoint rows Pbar.
template <class Real, class Team, class Matrices, class Rows>
struct LinearReplay {
  using Vec = typename Team::Vec;
  const Team& team;
  const Matrices& mats;
  const Rows& P;
  ColumnsOf<Team, Rows> Pt;
  Rows& Pbar;
  Vec a_bar, b_bar;
  static constexpr bool two_sided = false;

  SINKGRAD_HD void start(Vec& a, Vec&) const {
    team.each([&](Slot s) { a[s] = 1; });
  }
  SINKGRAD_HD void step(Vec& a, Vec& b, int) const { linear_domain_step<Real>(team, P, Pt, a, b); }

  template <class AllA, class AllB>
  SINKGRAD_HD void seed(const Vec& a, const Vec&, const AllA& all_a, const AllB& all_b) {
    const int n = team.n();
    team.each([&](Slot s) {
      const auto& G = mats.G_row(s);
      const auto& Gc = mats.G_col(s);
      Real row = 0, column = 0;
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        Pbar[s][j] = G[j] * a[s] * all_b[j];
        row += G[j] * P[s][j] * all_b[j];
        column += Gc[j] * all_a[j] * Pt[s][j];
      }
      a_bar[s] = row;
      b_bar[s] = column;
    });
  }

  template <class AllB>
  SINKGRAD_HD void back(const Vec& a, const Vec& b, const AllB& all_b, const Vec& a_prev, int) {
    linear_step_back<Real>(
        team, P, Pt, Pbar, a_bar, b_bar, a, all_b, a_prev, [](Slot, Real y) { return y; },
        [&](Slot s, Real b_total) {
          b_bar[s] = 0;  // b_{t-1} only enters step t - 1
          return -b_total * b[s] * b[s];
        });
  }
};

// The log-domain replay: u = f, v = g; W is the adjoint in log space.
template <class Real, class Team, class Matrices, class Rows>
struct LogReplay {
  using Vec = typename Team::Vec;
  const Team& team;
  const Matrices& mats;
  Rows& W;
  static constexpr bool two_sided = false;

  SINKGRAD_HD void start(Vec& f, Vec&) const {
    team.each([&](Slot s) { f[s] = 0; });
  }
  SINKGRAD_HD void step(Vec& f, Vec& g, int) const {
    const int n = team.n();
    const auto& all_f = team.share(f);
    team.each([&](Slot s) { g[s] = negative_logsumexp<Team::cap, Real>(mats.M_col(s), all_f, n); });
    const auto& all_g = team.share(g);
    team.each([&](Slot s) { f[s] = negative_logsumexp<Team::cap, Real>(mats.M_row(s), all_g, n); });
  }

  template <class AllF, class AllG>
  SINKGRAD_HD void seed(const Vec& f, const Vec&, const AllF&, const AllG& all_g) const {
    const int n = team.n();
    team.each([&](Slot s) {
      const auto& M = mats.M_row(s);
      const auto& G = mats.G_row(s);
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        W[s][j] = normalised_entry(M[j], f[s], all_g[j], true) * G[j];
      }
    });
  }

  template <class AllG>
  SINKGRAD_HD void back(const Vec& f, const Vec&, const AllG& all_g, const Vec& f_prev, int) const {
    const int n = team.n();
    // Row normalisation X_t = exp(M + f_t + g_t): lane-local.
    team.each([&](Slot s) {
      const auto& M = mats.M_row(s);
      Real row_sum = 0;
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        row_sum += W[s][j];
      }
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        W[s][j] -= normalised_entry(M[j], f[s], all_g[j], true) * row_sum;
      }
    });
    // Column normalisation Y_t = exp(M + f_{t-1} + g_t): column sums over the team.
    auto column_sum = team.template line<0>();
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      column_sum[j] = team.sum([&](Slot s) { return W[s][j]; });
    }
    team.each([&](Slot s) {
      const auto& M = mats.M_row(s);
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        W[s][j] -= normalised_entry(M[j], f_prev[s], all_g[j], false) * column_sum[j];
      }
    });
  }
};

// Writes grad_ij = value(s, j) when every value is finite; returns whether it did.
template <class Real, class Team, class Matrices, class Value>
SINKGRAD_HD bool write_if_finite(const Team& team, const Matrices& mats, Value value) {
  const int n = team.n();
  bool finite = true;
  team.each([&](Slot s) {
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      if (!is_finite(value(s, j))) finite = false;
    }
  });
  if (!team.all(finite)) return false;
  team.sync();  // the gradient overwrites G on the GPU
  team.each([&](Slot s) {
    const auto& grad = mats.grad_row(s);
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      grad[j] = value(s, j);
    }
  });
  return true;
}

// Whether every entry of G is finite (every lane learns it): an unrolled replay refuses a
// non-finite G before it starts.
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool grad_output_finite(const Team& team, const Matrices& mats) {
  const int n = team.n();
  bool finite = true;
  team.each([&](Slot s) {
    const auto& G = mats.G_row(s);
    for (int j = 0; j < n; ++j)
      if (!is_finite(G[j])) finite = false;
  });
  return team.all(finite);
}

// dL/dM of the T-step forward for one matrix. mats: M_row, M_col (the logits), G_row, G_col,
// grad_row; segment L from unrolled_segment_length(team.stride(), T, storage Reals).
template <class Real, class Team, class Matrices>
SINKGRAD_HD MatrixOutcome unrolled_team(const Team& team, const Matrices& mats, int T, int L) {
  if (!grad_output_finite<Real>(team, mats))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  auto P = team.template rows<0>();
  auto Pt = team.template rows<1>();
  auto adjoint = team.template rows<2>();  // P̄ (linear domain) or W (log domain)
  using Rows = decltype(P);
  bool M_finite = true;
  if (linear_domain_rows<Real>(team, mats, M_finite, P, Pt)) {
    LinearReplay<Real, Team, Matrices, Rows> replay{team, mats, P, {P, Pt}, adjoint, {}, {}};
    replay_in_reverse<Real>(team, T, L, replay);
    if (write_if_finite<Real>(team, mats, [&](Slot s, int j) { return P[s][j] * adjoint[s][j]; }))
      return {SolveStatus::ok, T};
  } else if (!M_finite) {
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  }
  LogReplay<Real, Team, Matrices, Rows> replay{team, mats, adjoint};
  replay_in_reverse<Real>(team, T, L, replay);
  if (write_if_finite<Real>(team, mats, [&](Slot s, int j) { return adjoint[s][j]; }))
    return {SolveStatus::ok, T};
  return team_fail<Real>(team, mats, SolveStatus::breakdown, T);
}

}  // namespace sinkgrad::math
