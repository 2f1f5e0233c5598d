#pragma once
// The forward conventions with an eps in every denominator, and TileKernels' softmax base, in
// team form (kernels/team.hpp), run by the CPU for n <= 64 and the GPU for n <= 1024.
//
// The team normalises columns, then rows, and ends on rows; rows_first and tilekernels run on
// the transposed matrices (their last step normalises the columns of M, the rows of M^T). On
// the team's matrix, the convention is then: X_0 = B, T steps of (columns; rows), each
// X <- X / (X.sum(axis) + eps), with tilekernels' first column step left out (the softmax was
// M's row normalisation, a column one of M^T). The base is B = exp(M) (columns_first,
// rows_first) or B = S^T + eps, S = softmax_rows(M) (tilekernels).
//
// Linear domain, as forward/forward_team.hpp: X = diag(a) P diag(b). For B = exp(M),
// P = exp(M - 1 m^T) (column maxima m) and b_0 = e^m; for the softmax base P = B, b_0 = 1. A
// column step is b <- b / (b ⊙ (P^T a) + eps), i.e. b = 1 / u with u = c_b + P^T a (the dot
// product's sum started at c_b) and c_b = eps / b_old, and c_b <- eps u; rows the same way
// with c_a. Only c_b, never b_0,
// is formed (c_b = exp(log eps - m) at first), so eps is added to sums of exp(M) as written,
// without overflow. The last row step is the epilogue: R_ij = P_ij b_j / (sum_k P_ik b_k + c_a,i),
// which makes the rows sum to 1 - eps / (...) exactly to rounding, as the formula does.
//
// Log domain (widely spread logits, an eps or a c_b out of the linear domain's range): the
// potentials of forward/convention_forward.hpp, g <- g - log(exp(g + L) + eps), over log B.

#include <type_traits>
#include "forward/convention_forward.hpp"  // ConventionForward, log_add_exp

#include "forward/forward_team.hpp"
#include "forward/softmax_base.hpp"

namespace sinkgrad::math {

// log of the largest eps (and of the largest first c_b) the linear domain takes: 2^20.
template <class Real>
SINKGRAD_HD constexpr Real linear_domain_log_eps_cap() {
  return Real(13.862944);
}

// The potential after dividing sums exp(old + L) by (sum + eps); minus_L = -L.
template <class Real>
SINKGRAD_HD Real eps_potential(const ConventionForward<Real>& c, Real old, Real minus_L) {
  return c.eps == Real(0) ? minus_L : old - log_add_exp(old - minus_L, c.log_eps);
}

// Whether step t (1-based) normalises columns of the team's matrix (tilekernels' first not).
template <class Real>
SINKGRAD_HD bool team_step_has_columns(const ConventionForward<Real>& c, int t) {
  return !(c.softmax_base && t == 1);
}

// The linear domain's set-up of convention c: P (and Pt) and c_b, the first column step's eps
// term; with keep_normalisers, the softmax base's normalisers go to team.storage() (as
// log_base's, for the reverse; the forward does not keep them, and a lane that forms P from
// its rows then takes no logarithm). scratch: softmax_base_rows's, or nullptr. Returns whether
// the linear domain takes the matrix (finite: whether M is all finite).
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD bool convention_linear_rows(const Team& team, const Matrices& mats,
                                        const ConventionForward<Real>& c, bool& finite, Rows& P,
                                        Rows& Pt, typename Team::Vec& c_b, bool keep_normalisers,
                                        Real* scratch = nullptr) {
  const bool eps_in_range = c.log_eps <= linear_domain_log_eps_cap<Real>();
  if (c.softmax_base) {
    const bool linear = softmax_base_rows<Real>(team, mats, c, finite, P, Pt, c_b, scratch);
    if (keep_normalisers) team.store(team.storage(), c_b);
    team.each([&](Slot s) { c_b[s] = c.eps; });
    return linear && eps_in_range;
  }
  const bool linear = linear_domain_rows<Real>(team, mats, finite, P, Pt, &c_b);
  bool in_range = true;  // c_b = eps e^-m
  team.each([&](Slot s) {
    const Real log_c = c.log_eps - c_b[s];
    in_range = in_range && (c.eps == Real(0) || log_c <= -linear_domain_log_floor<Real>());
    c_b[s] = c.eps == Real(0) ? Real(0) : exp_of(log_c);
  });
  return team.all(in_range) && linear && eps_in_range;
}

// The log domain of convention c reads only the logits' tiles and team storage (its loops index
// no register rows or vectors, which keeps them small): log B at the team's (s, j), from M and
// the softmax's normalisers. c by value and the normalisers read where they are stored: an
// array indexed at run time would be put in local memory, and with it whatever it refers to
// (the kernel's parameters, which the linear domain's loop then read from there: the float32
// n = 32 forward had 128 registers and a 488-byte stack frame, now 96 registers and none).
template <class Real, class Team, class Matrices>
struct LogBase {
  ConventionForward<Real> c;
  const Matrices& mats;
  const Real* all_lse;  // logsumexp of M's rows (the team's columns), in team storage
  const typename Team::Vec& lse;
  SINKGRAD_HD Real row(Slot s, int j) const {
    const Real m = mats.M_row(s)[j];
    return c.softmax_base ? log_plus_eps(c, m - all_lse[j]) : m;
  }
  SINKGRAD_HD Real col(Slot s, int k) const {
    const Real m = mats.M_col(s)[k];
    return c.softmax_base ? log_plus_eps(c, m - lse[s]) : m;
  }
};

// The log base of convention c, its normalisers kept in team.storage() (its first stride Reals:
// a share() would not outlive the shares of the iteration).
template <class Real, class Team, class Matrices>
SINKGRAD_HD auto log_base(const Team& team, const Matrices& mats, const ConventionForward<Real>& c,
                          typename Team::Vec& lse) {
  if (c.softmax_base) {
    softmax_row_lse<Real>(team, mats, lse);
    team.store(team.storage(), lse);
  }
  team.sync();
  return LogBase<Real, Team, Matrices>{c, mats, team.storage(), lse};  // all_lse unused for exp(M)
}

// -logsumexp_k(value(k) + x[k]) over k < n (a loop, not unrolled).
template <class Real, class Value, class X>
SINKGRAD_HD Real minus_logsumexp(int n, const Value& value, const X& x) {
  Real top = value(0) + x[0];
  for (int k = 1; k < n; ++k) top = max_of(top, value(k) + x[k]);
  Real sum = 0;
  for (int k = 0; k < n; ++k) sum += exp_of(value(k) + x[k] - top);
  return -(top + log_of(sum));
}

// Step t of convention c in the log domain on the potentials f, g: its column normalisation
// (tilekernels' first has none) and, if rows, its row normalisation.
template <class Real, class Team, class Base>
SINKGRAD_HD void log_domain_step(const Team& team, const Base& base,
                                 const ConventionForward<Real>& c, typename Team::Vec& f,
                                 typename Team::Vec& g, int t, bool rows) {
  const int n = team.n();
  if (team_step_has_columns(c, t)) {
    const auto& all_f = team.share(f);
    team.each([&](Slot s) {
      g[s] = eps_potential(c, g[s],
                           minus_logsumexp<Real>(
                               n, [&](int k) { return base.col(s, k); }, all_f));
    });
  }
  if (!rows) return;
  const auto& all_g = team.share(g);
  team.each([&](Slot s) {
    f[s] = eps_potential(c, f[s],
                         minus_logsumexp<Real>(
                             n, [&](int j) { return base.row(s, j); }, all_g));
  });
}

// Half a linear-domain step of convention c, for the forward and its replay: the column half
// b = 1 / u, u = c_b + P^T a (lines: the columns of P, other: a, scaling: b, eps_term: c_b;
// the eps term c_b = eps / (old b) is the sum's start), then c_b <- eps u; the row half the
// same with the rows of P, b, a and c_a.
// all_other: the whole of `other`, from a share(), or Ones where `other` is all ones
// (tilekernels' first row half: b_1 = b_0 = 1), which takes no share.
template <class Real, class Team, class Lines, class All>
SINKGRAD_HD void convention_half_step_from(const Team& team, const Lines& lines,
                                           const ConventionForward<Real>& c, const All& all_other,
                                           typename Team::Vec& scaling,
                                           typename Team::Vec& eps_term) {
  const int n = team.n();
  team.each([&](Slot s) {
    const Real u = dot_n<Team::cap>(lines[s], all_other, n, eps_term[s]);
    scaling[s] = reciprocal_in_range(u);
    eps_term[s] = c.eps * u;
  });
}

template <class Real, class Team, class Lines>
SINKGRAD_HD void convention_half_step(const Team& team, const Lines& lines,
                                      const ConventionForward<Real>& c,
                                      const typename Team::Vec& other, typename Team::Vec& scaling,
                                      typename Team::Vec& eps_term) {
  convention_half_step_from<Real>(team, lines, c, team.share(other), scaling, eps_term);
}

// The log-domain form of convention_forward_team (widely spread logits, eps out of range).
template <class Real, class Team, class Matrices>
SINKGRAD_HD ForwardOutcome<Real> convention_forward_log_domain(const Team& team,
                                                               const Matrices& mats, int T,
                                                               const ConventionForward<Real>& c) {
  const int n = team.n();
  typename Team::Vec f, g, lse;
  const auto base = log_base<Real>(team, mats, c, lse);
  team.each([&](Slot s) { f[s] = g[s] = 0; });
  // The last row step is applied to the explicit iterate below.
  for (int t = 1; t <= T; ++t) log_domain_step<Real>(team, base, c, f, g, t, t < T);
  const auto& all_g = team.share(g);
  team.sync();  // R may overwrite M: every lane has read the last of M it needs but its row
  team.each([&](Slot s) {
    write_log_domain_line<Real, unrolled_cap<Team::cap>>(
        mats.R_row(s), n, [&](int j) { return base.row(s, j) + all_g[j]; }, f[s], c.eps);
  });
  return forward_violation<Real>(team, mats);
}

// The same out of line on the GPU, for a lane that holds the whole matrix in registers: inline
// (though rarely taken), it took the one-thread float32 kernels from 168 to 255 registers at
// n = 8 and from 56 to 64 at n = 4 (ptxas -v); for teams of several lanes out of line was not
// better (n = 16 float32: 127 against 72). team and mats by value: nothing of the caller's has
// to be put in memory for the call.
template <class Real, class Team, class Matrices>
SINKGRAD_HD_OUT_OF_LINE ForwardOutcome<Real> convention_forward_log_domain_out_of_line(
    const Team team, const Matrices mats, int T, const ConventionForward<Real> c) {
  return convention_forward_log_domain<Real>(team, mats, T, c);
}

// The forward of a convention with eps or the softmax base (see above); mats and the outcome as
// sinkhorn_forward_team's; team.storage(): team.stride() Reals.
template <class Real, class Team, class Matrices>
SINKGRAD_HD ForwardOutcome<Real> convention_forward_team(const Team& team, const Matrices& mats,
                                                         int T, const ConventionForward<Real>& c) {
  using Vec = typename Team::Vec;
  const int n = team.n();
  auto P = team.template rows<0>();
  auto Pt = team.template rows<1>();
  const ColumnsOf<Team, decltype(P)> columns{P, Pt};
  Vec a, b, c_a, c_b;  // c_a = eps / a, c_b = eps / b: the eps terms of the scaled denominators
  bool finite = true;
  const bool linear = convention_linear_rows<Real>(team, mats, c, finite, P, Pt, c_b,
                                                   /*keep_normalisers=*/false);
  if (!finite) return forward_fail<Real>(team, mats);
  if (linear) {
    team.each([&](Slot s) {
      a[s] = 1;
      b[s] = 1;
      c_a[s] = c.eps;
    });
    // Step 1 of the softmax base has no column half (its row half takes b_1 = b_0 = 1 as Ones);
    // the last step's row half is the epilogue below. The loop between holds whole steps only.
    const int first_whole = c.softmax_base ? 2 : 1;
    if (c.softmax_base && T > 1) convention_half_step_from<Real>(team, P, c, Ones<Real>{}, a, c_a);
    for (int t = first_whole; t < T; ++t) {
      convention_half_step<Real>(team, columns, c, a, b, c_b);
      convention_half_step<Real>(team, P, c, b, a, c_a);
    }
    if (T >= first_whole) convention_half_step<Real>(team, columns, c, a, b, c_b);
    bool in_range = true;  // scaling vectors and eps terms finite (M is still in its tile)
    team.each([&](Slot s) {
      in_range = in_range && is_finite(b[s]) && is_finite(c_a[s]) && b[s] > Real(0);
    });
    if (team.all(in_range)) {
      const auto& all_b = team.share(b);
      team.each([&](Slot s) {
        write_normalised_row<Real, Team>(
            mats.R_row(s), n, [&](int j) { return P[s][j] * all_b[j]; }, c_a[s]);
      });
      return forward_violation<Real>(team, mats);
    }
  }
  if constexpr (Team::columns_from_rows)
    return convention_forward_log_domain_out_of_line<Real>(team, mats, T, c);
  else
    return convention_forward_log_domain<Real>(team, mats, T, c);
}

// The team forward of the seeds' convention and of any other, as the CPU and CUDA drivers call
// them: forward(team, mats, T).
template <class Real>
struct SeedsTeamForward {
  static constexpr int storage_vectors = 0;  // team.storage() it needs, in vectors
  template <class Team, class Matrices>
  SINKGRAD_HD ForwardOutcome<Real> operator()(const Team& team, const Matrices& mats, int T) const {
    return sinkhorn_forward_team<Real>(team, mats, T);
  }
};

template <class Real>
struct ConventionTeamForward {
  static constexpr int storage_vectors = 1;
  ConventionForward<Real> convention;
  template <class Team, class Matrices>
  SINKGRAD_HD ForwardOutcome<Real> operator()(const Team& team, const Matrices& mats, int T) const {
    return convention_forward_team<Real>(team, mats, T, convention);
  }
};

}  // namespace sinkgrad::math
