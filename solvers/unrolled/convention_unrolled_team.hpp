#pragma once
// `unrolled` of the forwards with eps and of TileKernels' softmax base, in team form: the exact
// derivative of forward/convention_team.hpp, run by the CPU and the GPU for n <= 1024 (on the
// transposed matrices for rows_first and tilekernels, as the forward).
//
// Linear domain. Step t: the denominators d_b = P^T a_{t-1} + eps d_b' and
// d_a = P b_t + eps d_a' (' of step t - 1: eps / b_{t-1} = eps d_b'), b_t = 1 / d_b,
// a_t = 1 / d_a (eps d_b of step 0 is e^-m eps, c_b of the forward; tilekernels' step 1 has no
// column normalisation, b_1 = b_0 = 1). The denominators obey a linear recurrence, so their
// adjoints ȳ (of d_a) and z̄ (of d_b) carry eps from step t + 1 instead of dividing by a_{t-1}²
// and b_{t-1}²:
//     ȳ_t = -ā a_t² + eps ȳ_{t+1},   z̄_t = -(b̄ + P^T ȳ_t) b_t² + eps z̄_{t+1},
//     ā_{t-1} = P z̄_t,   P̄ += ȳ_t b_t^T + a_{t-1} z̄_t^T
// (unrolled_team.hpp's step with the two eps terms, one multiply-add each; b_0 and a_0 are
// constants). The replayed steps carry eps / b_{t-1} as the forward does (eps times the last
// denominator), recomputing it only where a segment starts from a checkpoint, which therefore
// holds both vectors. Every division is a reciprocal in range, as in the forward: the replay
// keeps to the linear domain's range (a gradient that leaves it is not finite and is replayed
// in the log domain). The forward depends on M only through X_0 = P diag(b_0) with the maxima
// held fixed, so dL/dM = P ⊙ P̄ for B = exp(M). For the softmax base P = S^T + eps:
// S̄^T = P̄, and the softmax's reverse dM_js = S_js (S̄_js - sum_k S̄_jk S_jk).
//
// Log domain: W = X ⊙ dL/dX, reversed as unrolled_team.hpp's LogReplay over log B (eps changes
// the iterates, not the form: convention_unrolled.hpp); at the end W = dL/d log B, and for the
// softmax base W_S = W ⊙ S / (S + eps) before the softmax's reverse.

#include "forward/convention_team.hpp"
#include "solvers/unrolled/unrolled_team.hpp"

namespace sinkgrad::math {

// LinearReplay with the eps terms in its step and reverse. The default's own back() stays
// without them (its kernel is the measured default; eps = 0 here would add their work to it).
template <class Real, class Team, class Matrices, class Rows>
struct ConventionLinearReplay : LinearReplay<Real, Team, Matrices, Rows> {
  using Vec = typename Team::Vec;
  using Base = LinearReplay<Real, Team, Matrices, Rows>;
  using Base::a_bar, Base::b_bar, Base::P, Base::Pt, Base::Pbar, Base::team;
  static constexpr bool two_sided = true;
  const ConventionForward<Real>& c;
  const Vec& c_b0;         // eps / b_0
  Vec c_a{}, c_b{};        // eps / a, eps / b of the state the next step starts from
  Vec y_next{}, z_next{};  // ȳ, z̄ of the step reversed last (step t + 1)

  SINKGRAD_HD void start(Vec& a, Vec& b) {
    team.each([&](Slot s) {
      a[s] = 1;
      b[s] = 1;  // b_0 itself (e^m) is never read: step 1 takes c_b0 (tilekernels: b_1 = 1)
    });
    resume(a, b, 0);
  }
  // The eps terms of a state read back from the tape at step t: carried from step to step
  // (c <- eps u, one product), they are recomputed only where a segment starts.
  SINKGRAD_HD void resume(const Vec& a, const Vec& b, int t) {
    team.each([&](Slot s) {
      c_a[s] = t == 0 ? c.eps : c.eps * reciprocal_in_range(a[s]);
      c_b[s] = t == 0 ? c_b0[s] : c.eps * reciprocal_in_range(b[s]);
    });
  }
  SINKGRAD_HD void step(Vec& a, Vec& b, int) {
    convention_half_step<Real>(team, Pt, c, a, b, c_b);
    convention_half_step<Real>(team, P, c, b, a, c_a);
  }
  // Tilekernels' step 1 has no column half: b_1 = b_0 = 1 and c_b = eps (its c_b0) stay, and
  // its row half takes b as Ones (replay_in_reverse runs it outside its loops).
  SINKGRAD_HD bool first_step_differs() const { return c.softmax_base; }
  SINKGRAD_HD void first_step(Vec& a, Vec&) {
    convention_half_step_from<Real>(team, P, c, Ones<Real>{}, a, c_a);
  }

  template <class AllB>
  SINKGRAD_HD void back(const Vec& a, const Vec& b, const AllB& all_b, const Vec& a_prev, int) {
    back_of<true>(a, b, all_b, a_prev);
  }
  template <class AllB>
  SINKGRAD_HD void first_back(const Vec& a, const Vec& b, const AllB& all_b, const Vec& a_prev,
                              int) {
    back_of<false>(a, b, all_b, a_prev);
  }
  template <bool columns, class AllB>
  SINKGRAD_HD void back_of(const Vec& a, const Vec& b, const AllB& all_b, const Vec& a_prev) {
    linear_step_back<Real, columns>(
        team, P, Pt, Pbar, a_bar, b_bar, a, all_b, a_prev,
        [&](Slot s, Real y) { return y_next[s] = y + c.eps * y_next[s]; },
        [&](Slot s, Real b_total) {
          b_bar[s] = 0;  // b_{t-1} enters step t through d_b, carried by z̄
          return z_next[s] = -b_total * b[s] * b[s] + c.eps * z_next[s];
        });
  }
};

// W lives in the gradient's rows (the G tile on the GPU, overwritten in place: W_ij = X_ij G_ij),
// so that no loop here indexes register rows (they stay short loops, not unrolled code).
template <class Real, class Team, class Matrices, class Base>
struct ConventionLogReplay {
  using Vec = typename Team::Vec;
  static constexpr bool two_sided = true;
  const Team& team;
  const Matrices& mats;
  const ConventionForward<Real>& c;
  const Base& base;

  SINKGRAD_HD void start(Vec& f, Vec& g) const {
    team.each([&](Slot s) { f[s] = g[s] = 0; });
  }
  SINKGRAD_HD void step(Vec& f, Vec& g, int t) const {
    log_domain_step<Real>(team, base, c, f, g, t, true);
  }
  template <class AllF, class AllG>
  SINKGRAD_HD void seed(const Vec& f, const Vec&, const AllF&, const AllG& all_g) const {
    const int n = team.n();
    team.sync();  // the linear replay's lanes may still read G's columns
    team.each([&](Slot s) {
      const auto& G = mats.G_row(s);
      const auto& W = mats.grad_row(s);
      for (int j = 0; j < n; ++j)
        W[j] = normalised_entry(base.row(s, j), f[s], all_g[j], true) * G[j];
    });
  }
  template <class AllG>
  SINKGRAD_HD void back(const Vec& f, const Vec&, const AllG& all_g, const Vec& f_prev,
                        int t) const {
    const int n = team.n();
    team.each([&](Slot s) {  // the row normalisation, X_t = exp(log B + f_t + g_t)
      const auto& W = mats.grad_row(s);
      Real row_sum = 0;
      for (int j = 0; j < n; ++j) row_sum += W[j];
      for (int j = 0; j < n; ++j)
        W[j] -= normalised_entry(base.row(s, j), f[s], all_g[j], true) * row_sum;
    });
    if (!team_step_has_columns(c, t)) return;
    for (int j = 0; j < n; ++j) {  // the column one, Y_t = exp(log B + f_{t-1} + g_t)
      const Real column_sum = team.sum([&](Slot s) { return mats.grad_row(s)[j]; });
      team.each([&](Slot s) {
        mats.grad_row(s)[j] -=
            normalised_entry(base.row(s, j), f_prev[s], all_g[j], false) * column_sum;
      });
    }
  }
};

// S^T into the rows S for the softmax's reverse. from_P: they hold the linear domain's
// P = S^T + eps, and S = P - eps wherever P >= 2 eps (then S >= eps, and P's rounding and the
// subtraction's make at most 3 units in the last place of S; with eps = 0, S = P); below, and
// for the log domain, S = exp(M - lse) from the rows' normalisers in team.storage()
// (convention_linear_rows, log_base): with normal logits no exponential is taken in the linear
// domain.
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD void softmax_rows_of_S(const Team& team, const Matrices& mats,
                                   const ConventionForward<Real>& c, Rows& S, bool from_P) {
  const int n = team.n();
  const Real* all_lse = team.storage();  // stored before the replay's shares
  team.each([&](Slot s) {
    bool below_eps = !from_P;
    if (from_P) {
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        S[s][j] -= c.eps;
        if (S[s][j] < c.eps) below_eps = true;
      }
    }
    if (below_eps) {
      const auto& M = mats.M_row(s);
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        if (!from_P || S[s][j] < c.eps) S[s][j] = exp_of(M[j] - all_lse[j]);
      }
    }
  });
}

// The softmax's reverse, in place in the gradient's rows, which hold S^T ⊙ S̄^T:
// dM_js = S_js S̄_js - S_js sum_k S̄_jk S_jk, a row of S being a column of the team's; S^T in
// the rows S (softmax_rows_of_S).
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD MatrixOutcome softmax_back(const Team& team, const Matrices& mats, const Rows& S,
                                       int T) {
  const int n = team.n();
  // dot_j = sum_s x_sj: each lane sums the columns it owns in the canonical order
  // (kernels/team.hpp) and shares them; n team sums cost a GPU team n butterflies of shuffles.
  typename Team::Vec column_sum;
  team.sync();
  team.each([&](Slot s) {
    column_sum[s] = canonical_sum<Real>(n, [&](int i) { return mats.grad_col(s)[i]; });
  });
  const auto& dot = team.share(column_sum);
  bool finite = true;
  team.each([&](Slot s) {
    const auto& x = mats.grad_row(s);
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      x[j] -= S[s][j] * dot[j];
      if (!is_finite(x[j])) finite = false;
    }
  });
  if (team.all(finite)) return {SolveStatus::ok, T};
  return team_fail<Real>(team, mats, SolveStatus::breakdown, T);
}

// dL/dM for one matrix of the T-step forward of convention c (mats as unrolled_team's);
// team.storage(): unrolled_workspace(team.stride(), T, L, true) Reals (the softmax's normalisers,
// then the tape, its checkpoints two-sided), and with rows_through_storage at least n + 1
// vectors (the softmax base's rows of P transposed behind the normalisers: softmax_base_rows).
template <class Real, class Team, class Matrices>
SINKGRAD_HD MatrixOutcome convention_unrolled_team(const Team& team, const Matrices& mats, int T,
                                                   int L, const ConventionForward<Real>& c,
                                                   bool rows_through_storage = false) {
  using Vec = typename Team::Vec;
  const int n = team.n();
  if (!grad_output_finite<Real>(team, mats))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  auto P = team.template rows<0>();
  auto Pt = team.template rows<1>();
  auto adjoint = team.template rows<2>();  // P̄ (linear domain) or W (log domain)
  using Rows = decltype(P);
  Vec lse;  // the softmax's row normalisers (column s of the team's matrix)
  bool finite = true;
  Vec c_b0{};
  Real* scratch = rows_through_storage ? team.storage() + team.stride() : nullptr;
  if (convention_linear_rows<Real>(team, mats, c, finite, P, Pt, c_b0,
                                   /*keep_normalisers=*/true, scratch)) {
    ConventionLinearReplay<Real, Team, Matrices, Rows> replay{
        {team, mats, P, {P, Pt}, adjoint, {}, {}}, c, c_b0};
    replay_in_reverse<Real>(team, T, L, replay);
    // dL/dM = P ⊙ P̄ for exp(M); for the softmax base S̄^T = P̄, and P's rows take S^T
    if (c.softmax_base) softmax_rows_of_S<Real>(team, mats, c, P, /*from_P=*/true);
    if (write_if_finite<Real>(team, mats, [&](Slot s, int j) { return P[s][j] * adjoint[s][j]; }))
      return c.softmax_base ? softmax_back<Real>(team, mats, P, T)
                            : MatrixOutcome{SolveStatus::ok, T};
  } else if (!finite) {
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  }
  const auto base = log_base<Real>(team, mats, c, lse);
  ConventionLogReplay<Real, Team, Matrices, decltype(base)> replay{team, mats, c, base};
  replay_in_reverse<Real>(team, T, L, replay);
  if (c.softmax_base) {  // W_S = W ⊙ S / (S + eps) = W (1 - eps / B), in place
    if (c.eps != Real(0))
      team.each([&](Slot s) {
        const auto& W = mats.grad_row(s);
        for (int j = 0; j < n; ++j) W[j] *= -expm1_of(c.log_eps - base.row(s, j));
      });
    softmax_rows_of_S<Real>(team, mats, c, Pt, /*from_P=*/false);
    return softmax_back<Real>(team, mats, Pt, T);
  }
  if (write_if_finite<Real>(team, mats, [&](Slot s, int j) { return mats.grad_row(s)[j]; }))
    return {SolveStatus::ok, T};
  return team_fail<Real>(team, mats, SolveStatus::breakdown, T);
}

}  // namespace sinkgrad::math
