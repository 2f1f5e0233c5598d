#pragma once
// The Sinkhorn forward in team form (kernels/team.hpp), run by the CPU and the GPU.
//
// Every iterate is X_t = diag(a_t) P diag(b_t) with P = exp(M - 1 m^T), m the column maxima
// (the first step normalises columns, so R does not change when a column of M is shifted), so
// one step is two matrix-vector products:
//     b_t = 1 / (P^T a_{t-1})     (column normalisation, a_0 = 1)
//     a_t = 1 / (P b_t)           (row normalisation)
// and R = diag(a_T) P diag(b_T): n^2 exponentials in all instead of 2 n^2 per step. This
// "linear domain" is exact to rounding as long as no entry of P underflows: every entry of
// P is in [floor, 1] and each column holds a 1, so a, b and every sum stay far inside the
// floating-point range. A matrix with an entry of P below the floor (logits spread over more
// than 27.7 in a column in float32, 207.9 in float64) is iterated in the log domain instead
// (potentials f, g, logsumexp; forward/log_domain.hpp), which is safe for logits of any
// magnitude but costs 2 n^2 exponentials per step.

#include "forward/log_domain.hpp"
#include "kernels/team.hpp"

namespace sinkgrad::math {

// log of the smallest entry of P the linear domain accepts: 2^-40 (float), 2^-300 (double).
template <class Real>
SINKGRAD_HD constexpr Real linear_domain_log_floor() {
  return sizeof(Real) == 4 ? Real(-27.725887) : Real(-207.94415416798358);
}

// -logsumexp_k(x[k] + y[k]) over k < n.
template <int cap, class Real, class X, class Y>
SINKGRAD_HD Real negative_logsumexp(const X& x, const Y& y, int n) {
  Real top = x[0] + y[0];
  SINKGRAD_UNROLL
  for (int k = 1; k < cap; ++k) {
    if (k >= n) break;
    top = max_of(top, x[k] + y[k]);
  }
  Real sum = 0;
  SINKGRAD_UNROLL
  for (int k = 0; k < cap; ++k) {
    if (k >= n) break;
    sum += exp_of(x[k] + y[k] - top);
  }
  return -(top + log_of(sum));
}

// Column i of P (Pt[s][j] = P[j][i]) for the component s. A team whose lane holds all of P in
// registers (a one-thread GPU team) reads it out of P's rows at no cost and leaves Pt unused;
// the others keep their columns in Pt (linear_domain_rows fills it): GPU lanes own their
// columns, and on the CPU a contiguous copy vectorises where a strided column does not
// (measured: docs/performance.md).
template <class Team, class Rows>
struct ColumnsOf {
  const Rows& P;
  const Rows& Pt;
  SINKGRAD_HD decltype(auto) operator[](Slot s) const {
    if constexpr (Team::columns_from_rows)
      return ColumnOfRows<Rows>{P, s.k};
    else
      return Pt[s];
  }
};

// Whether a team computes P's columns Pt itself, entry by entry: a GPU team whose lanes own
// their columns. A one-thread GPU team reads them out of its rows (ColumnsOf); a team of one
// lane that keeps them apart (the CPU's) copies them out of its rows once P is complete
// (copy_columns_of_rows): the same values, exp of the same differences, without a second
// exponential per entry.
template <class Team>
inline constexpr bool computes_columns = !Team::columns_from_rows && !Team::one_lane;

template <class Team, class Rows>
SINKGRAD_HD void copy_columns_of_rows(const Team& team, const Rows& P, Rows& Pt) {
  if constexpr (!Team::columns_from_rows && Team::one_lane) {
    const int n = team.n();
    team.each([&](Slot s) {
      for (int j = 0; j < n; ++j) Pt[s][j] = P[Slot{j, j}][s.i];
    });
  }
}

// P[s][j] = exp(M_sj - shift_j) for the lane's rows of the team's matrix M and, where the team
// computes them (computes_columns), its columns Pt[s][j] = exp(M_js - shift_s); otherwise copied
// out of the rows. shift: one value per column (the column maxima).
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD void shifted_exponentials(const Team& team, const Matrices& mats,
                                      const typename Team::Vec& shift, Rows& P, Rows& Pt) {
  const int n = team.n();
  const auto& all_shift = team.share(shift);
  team.each([&](Slot s) {
    const auto& row = mats.M_row(s);
    const auto& col = mats.M_col(s);
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      P[s][j] = exp_of(row[j] - all_shift[j]);
      if constexpr (computes_columns<Team>) Pt[s][j] = exp_of(col[j] - shift[s]);
    }
  });
  copy_columns_of_rows(team, P, Pt);
}

// The linear-domain set-up shared by the forward and the unrolled replay: whether every entry of
// M is finite (finite) and every column spread little enough (returned), and then P's rows
// (P[slot]) and, unless the team reads them out of the rows (ColumnsOf), its columns (Pt[slot]:
// column i of P), with the column maxima subtracted. A column holding a NaN or an infinity
// fails the spread test (a NaN or -inf difference, or inf - inf), so the rows are scanned for
// finiteness only when some column fails it.
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD bool linear_domain_rows(const Team& team, const Matrices& mats, bool& finite, Rows& P,
                                    Rows& Pt, typename Team::Vec* maxima = nullptr) {
  const int n = team.n();
  typename Team::Vec top;  // column maxima
  bool spread_ok = true;
  team.each([&](Slot s) {
    const auto& col = mats.M_col(s);
    Real m = col[0];
    SINKGRAD_UNROLL
    for (int k = 1; k < Team::cap; ++k) {
      if (k >= n) break;
      m = max_of(m, col[k]);
    }
    top[s] = m;
    if (maxima != nullptr) (*maxima)[s] = m;
    SINKGRAD_UNROLL
    for (int k = 0; k < Team::cap; ++k) {
      if (k >= n) break;
      if (!(col[k] - m >= linear_domain_log_floor<Real>())) spread_ok = false;
    }
  });
  if (!team.all(spread_ok)) {
    bool all_finite = true;  // a plain loop: math::all_finite here (an early return) took the
                             // one-thread n = 8 float32 forward from 168 to 255 registers
    team.each([&](Slot s) {
      const auto& row = mats.M_row(s);
      for (int k = 0; k < n; ++k)
        if (!is_finite(row[k])) all_finite = false;
    });
    finite = team.all(all_finite);
    return false;
  }
  finite = true;
  shifted_exponentials<Real>(team, mats, top, P, Pt);
  return true;
}

// One linear-domain step: b = 1 / (P^T a), then a = 1 / (P b). The sums stay far inside the
// floating-point range (P's entries are in [floor, 1], each column holds a 1, and the scaling
// vectors vary by at most the ratio 1 / floor), so the reciprocals skip the IEEE division's
// out-of-range path (reciprocal_in_range).
template <class Real, class Team, class Rows, class Columns>
SINKGRAD_HD void linear_domain_step(const Team& team, const Rows& P, const Columns& Pt,
                                    typename Team::Vec& a, typename Team::Vec& b) {
  const int n = team.n();
  const auto& all_a = team.share(a);
  team.each([&](Slot s) { b[s] = reciprocal_in_range(dot_n<Team::cap>(Pt[s], all_a, n)); });
  const auto& all_b = team.share(b);
  team.each([&](Slot s) { a[s] = reciprocal_in_range(dot_n<Team::cap>(P[s], all_b, n)); });
}

// R[j] = value(j) / (sum_k value(k) + eps), j < n: the last step normalised rows, and scaling
// by the computed sum makes them sum to 1 to rounding whatever the scale of value (eps: the
// conventions with eps, forward/convention_team.hpp). One
// reciprocal per row and a product per entry (an IEEE division per entry cost the GPU about as
// much as the rest of the epilogue); value is evaluated twice rather than R read back.
template <class Real, class Team, class Row, class Value>
SINKGRAD_HD void write_normalised_row(const Row& R, int n, Value&& value, Real eps = 0) {
  Real sum = 0;
  SINKGRAD_UNROLL
  for (int j = 0; j < Team::cap; ++j) {
    if (j >= n) break;
    sum += value(j);
  }
  const Real inverse = Real(1) / (sum + eps);  // sum > 0: + 0 leaves it as it is
  SINKGRAD_UNROLL
  for (int j = 0; j < Team::cap; ++j) {
    if (j >= n) break;
    R[j] = value(j) * inverse;
  }
}

// The T linear-domain steps from P (linear_domain_rows), then R's rows (R_row(s): row s).
template <class Real, class Team, class Rows, class RowOf>
SINKGRAD_HD void linear_domain_forward(const Team& team, const Rows& P, const Rows& Pt, int T,
                                       RowOf&& R_row) {
  const int n = team.n();
  typename Team::Vec a, b;
  team.each([&](Slot s) { a[s] = b[s] = 1; });  // b: each step's first result (T >= 1)
  const ColumnsOf<Team, Rows> columns{P, Pt};
  for (int t = 0; t < T; ++t) linear_domain_step<Real>(team, P, columns, a, b);
  const auto& all_b = team.share(b);
  team.each([&](Slot s) {
    write_normalised_row<Real, Team>(R_row(s), n, [&](int j) { return a[s] * P[s][j] * all_b[j]; });
  });
}

template <class Real>
struct ForwardOutcome {
  bool finite;     // false: the logits were not all finite (R is NaN)
  Real violation;  // max_j |sum_i R_ij - 1|
};

// The outcome of a matrix whose logits are not all finite: R = NaN.
template <class Real, class Team, class Matrices>
SINKGRAD_HD ForwardOutcome<Real> forward_fail(const Team& team, const Matrices& mats) {
  const int n = team.n();
  team.sync();
  team.each([&](Slot s) {
    const auto& R = mats.R_row(s);
    for (int j = 0; j < n; ++j) R[j] = quiet_nan<Real>();
  });
  return {false, quiet_nan<Real>()};
}

// The outcome once R is written: its columns' largest violation.
template <class Real, class Team, class Matrices>
SINKGRAD_HD ForwardOutcome<Real> forward_violation(const Team& team, const Matrices& mats) {
  const int n = team.n();
  team.sync();
  const Real violation = team.max([&](Slot s) {
    const auto& column = mats.R_col(s);
    Real sum = 0;
    for (int i = 0; i < n; ++i) sum += column[i];
    return abs_of(sum - Real(1));
  });
  return {true, violation};
}

// R (mats.R_row, written; mats.R_col, read back after team.sync()) of the T-step forward.
// mats: M_row(s), M_col(s) (the logits' row and column i), R_row(s), R_col(s). R may overwrite M
// in place: every lane has read the last of M that it needs, but its own row, before any lane
// writes R.
template <class Real, class Team, class Matrices>
SINKGRAD_HD ForwardOutcome<Real> sinkhorn_forward_team(const Team& team, const Matrices& mats,
                                                       int T) {
  const int n = team.n();
  auto P = team.template rows<0>();
  auto Pt = team.template rows<1>();
  bool finite = true;
  if (linear_domain_rows<Real>(team, mats, finite, P, Pt)) {
    linear_domain_forward<Real>(team, P, Pt, T, [&](Slot s) { return mats.R_row(s); });
  } else if (finite) {
    typename Team::Vec f, g;
    team.each([&](Slot s) { f[s] = g[s] = 0; });
    for (int t = 0; t < T; ++t) {
      const auto& all_f = team.share(f);
      team.each(
          [&](Slot s) { g[s] = negative_logsumexp<Team::cap, Real>(mats.M_col(s), all_f, n); });
      if (t + 1 == T) break;  // the last row step is R's own normalisation below
      const auto& all_g = team.share(g);
      team.each(
          [&](Slot s) { f[s] = negative_logsumexp<Team::cap, Real>(mats.M_row(s), all_g, n); });
    }
    const auto& all_g = team.share(g);
    team.each([&](Slot s) {
      const auto& M = mats.M_row(s);
      write_log_domain_line<Real, unrolled_cap<Team::cap>>(
          mats.R_row(s), n, [&](int j) { return M[j] + all_g[j]; }, f[s]);
    });
  } else {
    return forward_fail<Real>(team, mats);
  }
  return forward_violation<Real>(team, mats);
}

}  // namespace sinkgrad::math
