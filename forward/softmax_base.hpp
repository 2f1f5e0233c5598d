#pragma once
// TileKernels' softmax base in team form, for forward/convention_team.hpp: the row normalisers
// of M (logsumexp) and the linear domain's P = softmax_rows(M)^T + eps, on the team's matrix
// M^T (the convention runs on the transposed matrices).

#include "forward/convention_forward.hpp"  // ConventionForward, log_add_exp
#include "forward/forward_team.hpp"        // linear_domain_log_floor, copy_columns_of_rows

namespace sinkgrad::math {

// The largest of row[k], k < n; finite cleared where an entry is not finite.
template <class Real, class Row>
SINKGRAD_HD Real row_maximum(const Row& row, int n, bool& finite) {
  Real top = row[0];
  for (int k = 0; k < n; ++k) {
    if (!is_finite(row[k])) finite = false;
    top = max_of(top, row[k]);
  }
  return top;
}

// lse[s] = logsumexp of row s of M (column s of the team's matrix, M^T); whether M is finite.
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool softmax_row_lse(const Team& team, const Matrices& mats, typename Team::Vec& lse) {
  const int n = team.n();
  bool finite = true;
  team.each([&](Slot s) {
    const auto& col = mats.M_col(s);
    const Real top = row_maximum<Real>(col, n, finite);
    Real sum = 0;
    for (int k = 0; k < n; ++k) sum += exp_of(col[k] - top);
    lse[s] = top + log_of(sum);
  });
  return team.all(finite);
}

// log(S + eps) from log S.
template <class Real>
SINKGRAD_HD Real log_plus_eps(const ConventionForward<Real>& c, Real log_s) {
  return c.eps == Real(0) ? log_s : log_add_exp(log_s, c.log_eps);
}

// The one-lane form of softmax_base_rows below.
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD bool softmax_base_one_lane(const Team& team, const Matrices& mats,
                                       const ConventionForward<Real>& c, bool& finite, Rows& P,
                                       Rows& Pt, typename Team::Vec& lse) {
  const int n = team.n();
  const Real floor = exp_of(linear_domain_log_floor<Real>());
  bool all_finite = true, accepted = true;
  team.each([&](Slot s) {
    const auto& row_of_M = mats.M_col(s);  // row s of M, column s of the team's matrix
    const Real top = row_maximum<Real>(row_of_M, n, all_finite);
    Real sum = 0;
    SINKGRAD_UNROLL
    for (int k = 0; k < Team::cap; ++k) {
      if (k >= n) break;
      const Real e = exp_of(row_of_M[k] - top);
      sum += e;
      P[Slot{k, k}][s.k] = e;  // P_ks: the lane's slot k is row k
    }
    lse[s] = top + log_of(sum);
    const Real inverse = Real(1) / sum;
    SINKGRAD_UNROLL
    for (int k = 0; k < Team::cap; ++k) {
      if (k >= n) break;
      Real& p = P[Slot{k, k}][s.k];
      p = fma_of(p, inverse, c.eps);
      if (!(p >= floor)) accepted = false;
    }
  });
  finite = team.all(all_finite);
  if (!finite) return false;
  copy_columns_of_rows(team, P, Pt);
  return team.all(accepted);
}

// Linear-domain set-up of the softmax base: P = S^T + eps (P[s] and, unless read out of the
// rows, Pt[s] = column s of P), lse[s] = logsumexp of row s of M (column s of M^T). Returns
// whether every entry of P is at least the linear domain's floor (and M finite: finite).
//
// A team of one lane holds every row of P: it forms each e = exp(M_sk - max_k M_sk) once, for
// the sum and, scaled by 1 / sum in place, for P (n^2 exponentials instead of 2 n^2; S's
// relative error no longer grows with |lse|). Teams of several lanes own columns, not rows, and
// form P's rows from lse.
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD bool softmax_base_rows(const Team& team, const Matrices& mats,
                                   const ConventionForward<Real>& c, bool& finite, Rows& P,
                                   Rows& Pt, typename Team::Vec& lse) {
  if constexpr (Team::one_lane) {
    return softmax_base_one_lane<Real>(team, mats, c, finite, P, Pt, lse);
  } else {
    finite = softmax_row_lse<Real>(team, mats, lse);
    if (!finite) return false;
    const bool ok = shifted_exponentials<Real>(
        team, mats, lse, P, Pt, [&](Real x) { return x + c.eps; },
        [](Real p) { return p >= exp_of(linear_domain_log_floor<Real>()); });
    return team.all(ok);
  }
}

}  // namespace sinkgrad::math
