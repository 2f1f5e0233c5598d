#pragma once
// The corrected `direct` solve on the CPU for W matrices at once, one per SIMD lane
// (kernels/lanes.hpp): direct_corrected_team's steps run by a CpuTeam whose Real is
// Lanes<Real, W>, so each lane gets the bits the scalar team gets for its matrix. Its decisions
// are taken per matrix with the scalar team: the input check (team_marginals), the pivots (from
// the factor's diagonal), the condition test (conditioned() with the bound solved on the lanes;
// where it cannot decide, team_cholesky_rcond on the lane's factor, its branches are on values;
// its usual solves done ahead on the lanes, estimate_ahead.hpp) and a finite gradient; a matrix
// that fails one is left to the caller, which solves it with direct_corrected_team (and so reports
// its failure status).

#include "kernels/lanes.hpp"
#include "solvers/direct/direct_team.hpp"
#include "solvers/direct/estimate_ahead.hpp"

namespace sinkgrad::math {

// Lanes<Real, W> a group needs: R, G, the gradient, then the factor and its columns (the lanes
// team's rows<0..1>()), n^2 each.
inline long long direct_lanes_workspace(int n) {
  return 5LL * n * n;
}

// The corrected direct gradient of W matrices of n = N: mats_of(w) gives lane w's CpuMatrices.
// work: direct_lanes_workspace(N) Lanes; scalar_work: 2 N^2 Reals. Returns the lanes whose
// gradient it wrote (bit w: status ok); the caller solves the others.
template <int N, class Real, int W, class MatricesOf>
unsigned direct_lanes(MatricesOf mats_of, GradientSide project, Lanes<Real, W>* work,
                      Real* scalar_work) {
  using Pack = Lanes<Real, W>;
  using Scalar = CpuTeam<Real, N, N>;
  using Team = CpuTeam<Pack, N, N>;
  constexpr int nn = N * N;
  const Scalar scalar(N, scalar_work);
  Pack* const R = work;
  Pack* const G = work + nn;
  Pack* const grad = work + 2 * nn;
  const Team team(N, work + 3 * nn);

  // The input check and the marginals per matrix; a rejected lane solves a stand-in (R = 1,
  // G = 0, its marginals) that keeps its arithmetic finite.
  TeamMarginals<Team> m;
  unsigned valid = 0;
  for (int w = 0; w < W; ++w) {
    const auto mats = mats_of(w);
    TeamMarginals<Scalar> own;
    const bool ok = team_marginals<Real>(scalar, mats, own);
    if (ok) valid |= 1u << w;
    scalar.each([&](Slot s) {
      for (int j = 0; j < N; ++j) {
        R[s.i * N + j].v[w] = ok ? mats.R_row(s)[j] : Real(1);
        G[s.i * N + j].v[w] = ok ? mats.G_row(s)[j] : Real(0);
      }
      m.r[s].v[w] = ok ? own.r[s] : Real(N);
      m.c[s].v[w] = ok ? own.c[s] : Real(N);
      m.s_r[s].v[w] = ok ? own.s_r[s] : Real(0);
      m.s_c[s].v[w] = ok ? own.s_c[s] : Real(0);
    });
  }
  if (valid == 0) return 0;

  const CpuMatrices<Pack> lanes_mats{R, G, grad, N};
  typename Team::Vec beta;
  team_schur_rhs<Pack>(team, lanes_mats, true, m, beta);
  auto L = team.template rows<0>();
  auto Lt = team.template rows<1>();
  const Pack norm = team_corrected_schur_rows<Pack>(team, lanes_mats, m, L);
  if (!team_cholesky<Pack>(team, L, Lt)) return 0;  // no lane's pivot was positive

  // beta and the condition bound's comparison solve in the same rounds, as
  // direct_corrected_team. Then per lane: every pivot positive (so its diagonal is), then
  // conditioned(): the bound, and only where it cannot decide the estimate on the lane's factor
  // (its usual solves done ahead once one lane needs them).
  typename Team::Vec ones;
  auto bound_line = team.template line<0>();
  auto all_beta = team.template line<1>();
  team.each([&](Slot s) { ones[s] = Pack(Real(1)); });
  team_cholesky_solves<Pack>(team, L, Lt, team_solve<false>(beta, all_beta),
                             team_solve<true>(ones, bound_line));
  Real bounds[W];  // each lane's, before solve_ahead reuses line<0>
  for (int w = 0; w < W; ++w) {
    Real line[N];
    for (int j = 0; j < N; ++j) line[j] = bound_line[j].v[w];
    bounds[w] = inverse_bound_of<Real>(line, N);
  }
  SolvedAhead<Real, N, W> ahead;
  bool solved_ahead = false;
  auto own_L = scalar.template rows<0>();
  auto own_Lt = scalar.template rows<1>();
  unsigned factored = 0;
  for (int w = 0; w < W; ++w) {
    if (!(valid >> w & 1)) continue;
    bool positive = true;
    scalar.each([&](Slot s) { positive = positive && L[s][s.i].v[w] > Real(0); });
    if (!positive) continue;
    const Real matrix_norm = norm.v[w];
    const auto estimate = [&] {
      if (!solved_ahead) {
        solve_ahead(team, L, Lt, ahead);
        solved_ahead = true;
      }
      scalar.each([&](Slot s) {
        for (int j = 0; j < N; ++j) {
          own_L[s][j] = L[s][j].v[w];
          own_Lt[s][j] = Lt[s][j].v[w];
        }
      });
      const TeamWithSolvesAhead<Real, N, W> estimating(scalar_work, ahead, w);
      return team_cholesky_rcond<Real>(estimating, own_L, own_Lt, matrix_norm);
    };
    if (conditioned(bounds[w], matrix_norm, N, estimate)) factored |= 1u << w;
  }
  if (factored == 0) return 0;

  typename Team::Vec alpha;
  team_schur_alpha<Pack>(team, lanes_mats, true, m, beta, alpha);
  // Their finite tests hold where every lane passes; each lane's is taken below instead.
  team_assemble_gradient<Pack>(team, lanes_mats, alpha, beta);
  team_project_gradient<Pack>(team, lanes_mats, project);

  // A lane's gradient is finite after the projection exactly where it was before it too (a
  // non-finite entry makes its line's shift, and so an entry of the line, non-finite).
  return write_finite_lanes<N, W>(scalar, mats_of, factored,
                                  [&](Slot s, int j, int w) { return grad[s.i * N + j].v[w]; });
}

}  // namespace sinkgrad::math
