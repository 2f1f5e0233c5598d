#pragma once
// The corrected `direct` solve in team form (kernels/team.hpp): the function of direct_matrix's
// corrected branch (direct_math.hpp), with the lanes of a team sharing the work.
//
//   S + 11^T/n   lane a forms row a in its private rows (schur_matrix's operations),
//   Cholesky     right-looking: at step j the pivot is broadcast, column j of L is shared and
//                every lane updates its row; lane j keeps column j (its column of L),
//   beta, bound  one sweep of team_cholesky_solves for b and for the condition bound's
//                comparison system, each solve with L and L^T in n rounds of one broadcast
//                (the new component x_j is subtracted from every other lane's component as
//                soon as it is final),
//   condition    conditioned(): the bound, and only where it cannot decide Higham's estimator
//                of cholesky_rcond, same steps and decisions,
//   gradient     alpha and the gradient as the CG solvers do.
//
// Every entry gets the operations of dense_factorisation.hpp in the same order, so on the CPU
// team the result has the bits of direct_matrix, and on the GPU (built with -fmad=false) too.
// Lane-private rows and the replicated solution vector are only indexed by compile-time loop
// counters (registers on the GPU for K = 1); every decision is taken from broadcast or shared
// values, so the lanes of a team never diverge around a collective call.

#include <type_traits>

#include "kernels/team_fail.hpp"
#include "solvers/common/implicit_operators.hpp"
#include "solvers/direct/dense_factorisation.hpp"

namespace sinkgrad::math {

// The row of S + 11^T/n of each slot into S[s] (all n entries) and ||S + 11^T/n||_1 (on every
// lane). S_ab = c_a [a == b] - sum_i (R_ia R_ib) (1 / r_i) + 1/n, schur_matrix's order: the
// product of the two entries comes first, so S_ab and S_ba round alike.
template <class Real, class Team, class Matrices, class Rows>
SINKGRAD_HD Real team_corrected_schur_rows(const Team& team, const Matrices& mats,
                                           const TeamMarginals<Team>& m, Rows& S) {
  const int n = team.n();
  team.each([&](Slot s) {
    SINKGRAD_UNROLL
    for (int b = 0; b < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++b) {
      if (b >= n) break;
      S[s][b] = 0;
    }
  });
  SINKGRAD_UNROLL
  for (int i = 0; i < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++i) {
    if (i >= n) break;
    typename Team::Vec row;  // row i of R, from the columns the lanes hold
    team.each([&](Slot s) { row[s] = mats.R_col(s)[i]; });
    const Real weight = team.broadcast(i, [&](Slot s) { return Real(1) / m.r[s]; });
    const auto& R_i = team.share(row);
    team.each([&](Slot s) {
      const Real own = mats.R_col(s)[i];
      SINKGRAD_UNROLL
      for (int b = 0; b < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++b) {
        if (b >= n) break;
        S[s][b] += own * R_i[b] * weight;
      }
    });
  }
  // Column a of the lower triangle is row a from the diagonal on, then row a before it
  // (symmetric_norm_1's order); the largest column sum in ascending order.
  typename Team::Vec column_sum;
  team.each([&](Slot s) {
    Real sum = 0;
    SINKGRAD_UNROLL
    for (int b = 0; b < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++b) {
      if (b >= n) break;
      S[s][b] = ((b == s.i ? m.c[s] : Real(0)) - S[s][b]) + Real(1) / Real(n);
      if (b >= s.i) sum += abs_of(S[s][b]);
    }
    SINKGRAD_UNROLL
    for (int b = 0; b < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++b) {
      if (b >= n) break;
      if (b < s.i) sum += abs_of(S[s][b]);
    }
    column_sum[s] = sum;
  });
  const auto& sums = team.share(column_sum);
  Real norm = 0;
  SINKGRAD_UNROLL
  for (int j = 0; j < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++j) {
    if (j >= n) break;
    raise_to(norm, sums[j]);
  }
  return norm;
}

// In place: row i of S (L[s], entries j <= i) becomes row i of L with S = L L^T, and Lt[s]
// receives column i of L (entries k >= i). Right-looking, but every entry gets
// cholesky_factor's operations in its order (S_ik - L_i0 L_k0 - L_i1 L_k1 - ..., then / L_kk).
// Returns false (on every lane) when a pivot is not positive (for Lanes, when no lane's is).
template <class Real, class Team, class Rows>
SINKGRAD_HD bool team_cholesky(const Team& team, Rows& L, Rows& Lt) {
  const int n = team.n();
  SINKGRAD_UNROLL
  for (int j = 0; j < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++j) {
    if (j >= n) break;
    const Real pivot = team.broadcast(j, [&](Slot s) { return L[s][j]; });
    if (!any_positive(pivot)) return false;
    const Real diagonal = sqrt_of(pivot);
    typename Team::Vec column{};  // {}: GCC cannot see that share() reads only the n written
    team.each([&](Slot s) {
      // Selects, not branches on s.i == j (see CudaTeam::broadcast).
      L[s][j] = s.i == j ? diagonal : s.i > j ? L[s][j] / diagonal : L[s][j];
      column[s] = s.i >= j ? L[s][j] : Real(0);
    });
    const auto& L_j = team.share(column);
    team.each([&](Slot s) {
      SINKGRAD_UNROLL
      for (int k = 0; k < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++k) {
        if (k >= n) break;
        if (k > j && k <= s.i) L[s][k] -= L[s][j] * L_j[k];
        Lt[s][k] = s.i == j ? L_j[k] : Lt[s][k];
      }
    });
  }
  return true;
}

// One right-hand side of team_cholesky_solves: x, distributed like the rows, becomes the
// solution, which all[j] receives on every lane; comparison: solved with L's comparison matrix
// (cholesky_solve<true>).
template <bool comparison, class Vec, class Line>
struct TeamSolve {
  static constexpr bool comparison_matrix = comparison;
  Vec& x;
  Line& all;
};

template <bool comparison, class Vec, class Line>
SINKGRAD_HD TeamSolve<comparison, Vec, Line> team_solve(Vec& x, Line& all) {
  return {x, all};
}

// x = (L L^T)^-1 x for each right-hand side, with cholesky_solve's operations: in round j the
// owner of x_j divides by L_jj and broadcasts it, and every component still open subtracts its
// term (adds it, for the comparison matrix). The right-hand sides share the rounds, so that
// their dependent broadcasts overlap; each gets the operations it would get alone.
template <class Real, class Team, class Rows, class... Solves>
SINKGRAD_HD void team_cholesky_solves(const Team& team, const Rows& L, const Rows& Lt,
                                      Solves... solves) {
  const int n = team.n();
  const auto update = [](const auto& solve, Real& sum, const Real& entry, const Real& x_j) {
    if constexpr (std::decay_t<decltype(solve)>::comparison_matrix)
      sum += abs_of(entry) * x_j;
    else
      sum -= entry * x_j;
  };
  SINKGRAD_UNROLL
  for (int j = 0; j < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++j) {
    if (j >= n) break;
    const Real x_j[] = {team.broadcast(j, [&](Slot s) { return solves.x[s] / L[s][j]; })...};
    const auto forward = [&](const auto& solve, const Real& value) {
      team.each([&](Slot s) {
        if (s.i == j) solve.x[s] = value;
        if (s.i > j) update(solve, solve.x[s], L[s][j], value);
      });
    };
    int k = 0;
    (forward(solves, x_j[k++]), ...);
  }
  SINKGRAD_UNROLL
  for (int j = SINKGRAD_UNROLL_BOUND(Team::cap, n) - 1; j >= 0; --j) {
    if (j >= n) continue;
    const Real x_j[] = {team.broadcast(j, [&](Slot s) { return solves.x[s] / L[s][j]; })...};
    const auto backward = [&](const auto& solve, const Real& value) {
      solve.all[j] = value;
      team.each([&](Slot s) {
        if (s.i == j) solve.x[s] = value;
        if (s.i < j) update(solve, solve.x[s], Lt[s][j], value);
      });
    };
    int k = 0;
    (backward(solves, x_j[k++]), ...);
  }
}

// One right-hand side: team_cholesky_solves with one TeamSolve.
template <class Real, bool comparison = false, class Team, class Rows, class Line>
SINKGRAD_HD void team_cholesky_solve(const Team& team, const Rows& L, const Rows& Lt,
                                     typename Team::Vec& x, Line& all) {
  team_cholesky_solves<Real>(team, L, Lt, team_solve<comparison>(x, all));
}

template <class Real, int cap, class Line>
SINKGRAD_HD Real norm_1_of(const Line& x, int n) {
  Real sum = 0;
  SINKGRAD_UNROLL
  for (int j = 0; j < SINKGRAD_UNROLL_BOUND(cap, n); ++j) {
    if (j >= n) break;
    sum += abs_of(x[j]);
  }
  return sum;
}

// cholesky_rcond in team form: the same estimator, step for step, on the factor of
// team_cholesky. The solutions are replicated on every lane, so the norms, the sign tests and
// the index of the largest entry are computed by every lane alike, in cholesky_rcond's order.
template <class Real, class Team, class Rows>
SINKGRAD_HD Real team_cholesky_rcond(const Team& team, const Rows& L, const Rows& Lt,
                                     Real matrix_norm) {
  const int n = team.n();
  if (matrix_norm == Real(0)) return Real(0);
  if (n == 1) return Real(1);
  typename Team::Vec v, sign, old_sign{};
  auto all = team.template line<0>();
  team.each([&](Slot s) { v[s] = Real(1) / Real(n); });
  team_cholesky_solve<Real>(team, L, Lt, v, all);
  Real lower_bound = norm_1_of<Real, Team::cap>(all, n);
  Real old_lower_bound = lower_bound;
  int old_index = -1;
  for (int k = 0; k < 4; ++k) {
    bool same_sign = true;
    team.each([&](Slot s) {
      sign[s] = v[s] < Real(0) ? Real(-1) : Real(1);
      if (k == 0 || sign[s] != old_sign[s]) same_sign = false;
    });
    if (team.all(same_sign) && k > 0) break;
    team.each([&](Slot s) { v[s] = sign[s]; });
    team_cholesky_solve<Real>(team, L, Lt, v, all);
    int index = 0;  // first index of the largest |v_i|
    Real largest = abs_of(all[0]);
    SINKGRAD_UNROLL
    for (int i = 1; i < SINKGRAD_UNROLL_BOUND(Team::cap, n); ++i) {
      if (i >= n) break;
      if (abs_of(all[i]) > largest) {
        largest = abs_of(all[i]);
        index = i;
      }
    }
    if (index == old_index) break;
    team.each([&](Slot s) { v[s] = s.i == index ? Real(1) : Real(0); });
    team_cholesky_solve<Real>(team, L, Lt, v, all);
    lower_bound = norm_1_of<Real, Team::cap>(all, n);
    if (lower_bound <= old_lower_bound) break;
    team.each([&](Slot s) { old_sign[s] = sign[s]; });
    old_index = index;
    old_lower_bound = lower_bound;
  }
  team.each([&](Slot s) {
    v[s] = (s.i % 2 == 0 ? Real(1) : Real(-1)) * (Real(1) + Real(s.i) / Real(n - 1));
  });
  team_cholesky_solve<Real>(team, L, Lt, v, all);
  const Real alternate_lower_bound =
      (Real(2) * norm_1_of<Real, Team::cap>(all, n)) / (Real(3) * Real(n));
  const Real inverse_norm = max_of(lower_bound, alternate_lower_bound);
  return inverse_norm == Real(0) ? Real(0) : (Real(1) / inverse_norm) / matrix_norm;
}

// The corrected `direct` solve of one matrix: direct_matrix(..., SchurSystem::corrected, ...).
// Uses rows<0>() (S, then L) and rows<1>() (the columns of L).
template <class Real, class Team, class Matrices>
SINKGRAD_HD MatrixOutcome direct_corrected_team(const Team& team, const Matrices& mats,
                                                GradientSide project = GradientSide::none) {
  TeamMarginals<Team> m;
  if (!team_marginals<Real>(team, mats, m))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  typename Team::Vec beta;
  team_schur_rhs<Real>(team, mats, true, m, beta);
  auto L = team.template rows<0>();
  auto Lt = team.template rows<1>();
  const Real norm = team_corrected_schur_rows<Real>(team, mats, m, L);
  if (!team_cholesky<Real>(team, L, Lt)) return team_fail<Real>(team, mats, SolveStatus::breakdown);
  // beta and the condition bound's comparison solve in the same rounds.
  typename Team::Vec ones;
  team.each([&](Slot s) { ones[s] = Real(1); });
  auto all_beta = team.template line<1>();
  auto all_bound = team.template line<0>();
  team_cholesky_solves<Real>(team, L, Lt, team_solve<false>(beta, all_beta),
                             team_solve<true>(ones, all_bound));
  // The bound and the decision are replicated, so the team decides alike.
  if (!conditioned(inverse_bound_of<Real, unrolled_cap<Team::cap>>(all_bound, team.n()), norm,
                   team.n(), [&] { return team_cholesky_rcond<Real>(team, L, Lt, norm); }))
    return team_fail<Real>(team, mats, SolveStatus::breakdown);
  typename Team::Vec alpha;
  team_schur_alpha<Real>(team, mats, true, m, beta, alpha);
  if (!team_assemble_gradient<Real>(team, mats, alpha, beta) ||
      !team_project_gradient<Real>(team, mats, project))
    return team_fail<Real>(team, mats, SolveStatus::breakdown);
  return {SolveStatus::ok, 0};
}

}  // namespace sinkgrad::math
