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

// Linear-domain set-up of the softmax base: P = S^T + eps (P[s] and, unless read out of the
// rows, Pt[s] = column s of P), lse[s] = logsumexp of row s of M (column s of M^T). Returns
// whether every entry of P is at least the linear domain's floor (and M finite: finite).
//
// Each row of S is formed by the lane that owns it, column s of P: e = exp(M_sk - max_k M_sk)
// once, for the sum and, times 1 / sum plus eps, for P (S's relative error does not grow with
// |lse|). A one-lane team owns every column and reads (or copies) P's rows out of them. A lane
// of several takes its rows of P transposed through `scratch` (n vectors of team.stride()
// Reals of team storage, for a team of one slot per lane), or without it from the shared maxima
// and reciprocals: exp of the same differences, so P and its columns are the same bits either
// way, from n or 2 n exponentials per lane.
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD bool softmax_base_rows(const Team& team, const Matrices& mats,
                                   const ConventionForward<Real>& c, bool& finite, Rows& P,
                                   Rows& Pt, typename Team::Vec& lse, Real* scratch) {
  const int n = team.n();
  typename Team::Vec top, inverse;
  const auto column_of_P = [&](Slot s, int k) -> Real& {
    if constexpr (Team::one_lane)
      return P[Slot{k, k}][s.k];  // the lane's slot k is row k
    else
      return Pt[s][k];
  };
  bool all_finite = true;
  team.each([&](Slot s) {
    const auto& row_of_M = mats.M_col(s);  // row s of M, column s of the team's matrix
    top[s] = row_maximum<Real>(row_of_M, n, all_finite);
    Real sum = 0;
    SINKGRAD_UNROLL
    for (int k = 0; k < Team::cap; ++k) {
      if (k >= n) break;
      const Real e = exp_of(row_of_M[k] - top[s]);
      sum += e;
      column_of_P(s, k) = e;
    }
    lse[s] = top[s] + log_of(sum);
    inverse[s] = reciprocal_in_range(sum);  // sum in [1, n]
    SINKGRAD_UNROLL
    for (int k = 0; k < Team::cap; ++k) {
      if (k >= n) break;
      Real& p = column_of_P(s, k);
      p = fma_of(p, inverse[s], c.eps);
    }
  });
  finite = team.all(all_finite);
  if (!finite) return false;
  if constexpr (Team::one_lane) {
    copy_columns_of_rows(team, P, Pt);
  } else if (scratch != nullptr) {
    // Entry (r, c) of P at scratch[r stride + (c + r) mod cap]: the lanes' stores of a row and
    // their loads of their own rows then fall on distinct banks (unskewed, a warp-wide team read
    // its rows from one bank; measured: docs/performance.md).
    static_assert((Team::cap & (Team::cap - 1)) == 0, "the skew wraps with a mask");
    constexpr int wrap = Team::cap - 1;
    const int stride = team.stride();  // >= cap: a vector of team storage
    team.each([&](Slot s) {
      SINKGRAD_UNROLL
      for (int k = 0; k < Team::cap; ++k) {
        if (k >= n) break;
        scratch[k * stride + ((s.i + k) & wrap)] = Pt[s][k];
      }
    });
    team.sync();
    team.each([&](Slot s) {
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        P[s][j] = scratch[s.i * stride + ((j + s.i) & wrap)];
      }
    });
    team.sync();  // the scratch's next writer may be another lane
  } else {
    // the maxima's registers are free before the reciprocals are shared
    const auto& all_top = team.share(top);
    team.each([&](Slot s) {
      const auto& row_of_A = mats.M_row(s);  // row s of the team's matrix
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        P[s][j] = exp_of(row_of_A[j] - all_top[j]);
      }
    });
    const auto& all_inverse = team.share(inverse);
    team.each([&](Slot s) {
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        P[s][j] = fma_of(P[s][j], all_inverse[j], c.eps);
      }
    });
  }
  const Real floor = exp_of(linear_domain_log_floor<Real>());
  if (c.eps >= floor) return true;  // P >= eps
  bool accepted = true;
  team.each([&](Slot s) {
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      if (!(P[s][j] >= floor)) accepted = false;
    }
  });
  return team.all(accepted);
}

}  // namespace sinkgrad::math
