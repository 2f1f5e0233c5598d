#pragma once
// The seeds' forward on the CPU for W matrices at once, one per SIMD lane (kernels/lanes.hpp): the
// linear-domain steps of forward_team.hpp (linear_domain_forward) run by a CpuTeam whose Real is
// Lanes<Real, W>, so each lane gets the bits the scalar team gets for its matrix. The set-up
// (the exponentials, the spread test) and the violation are taken per matrix with the scalar
// team; a matrix outside the linear domain is left to the caller (sinkhorn_forward_team: the
// log domain, or NaN for non-finite logits).

#include "forward/forward_team.hpp"
#include "kernels/lanes.hpp"

namespace sinkgrad::math {

// Lanes<Real, W> a group needs: P, its columns and R, n^2 each.
inline long long forward_lanes_workspace(int n) {
  return 3LL * n * n;
}

// Lane w's part of the linear domain's set-up, where wanted: linear_domain_rows by the scalar
// team (scratch: its rows<0..1>()), then P's rows into lane w of packed[0, n^2) and its columns
// into packed[n^2, 2 n^2); finite stand-ins (1) where the matrix is left to the caller. Returns
// whether lane w is in the linear domain.
template <int N, class Real, int W, class Matrices>
bool pack_linear_rows(const CpuTeam<Real, N, N>& scalar, const Matrices& mats, bool wanted, int w,
                      Lanes<Real, W>* packed) {
  auto P = scalar.template rows<0>();
  auto Pt = scalar.template rows<1>();
  bool finite = true;
  const bool on = wanted && linear_domain_rows<Real>(scalar, mats, finite, P, Pt);
  scalar.each([&](Slot s) {
    for (int j = 0; j < N; ++j) {
      packed[s.i * N + j].v[w] = on ? P[s][j] : Real(1);
      packed[N * N + s.i * N + j].v[w] = on ? Pt[s][j] : Real(1);
    }
  });
  return on;
}

// R of the T-step seeds' forward for W matrices of n = N: mats_of(w) gives lane w's matrices as
// the scalar team reads them (M_row, M_col, R_row, R_col). work: forward_lanes_workspace(N)
// Lanes; scalar_work: 2 N^2 Reals. Returns the lanes whose R it wrote, with their outcomes in
// outcomes[w]; the caller does the others.
template <int N, class Real, int W, class MatricesOf>
unsigned forward_lanes(MatricesOf mats_of, int T, Lanes<Real, W>* work, Real* scalar_work,
                       ForwardOutcome<Real>* outcomes) {
  using Pack = Lanes<Real, W>;
  const CpuTeam<Real, N, N> scalar(N, scalar_work);
  unsigned linear = 0;
  for (int w = 0; w < W; ++w)
    if (pack_linear_rows(scalar, mats_of(w), true, w, work)) linear |= 1u << w;
  if (linear == 0) return 0;

  const CpuTeam<Pack, N, N> team(N, work);  // rows<0>: P, rows<1>: its columns, rows<2>: R
  const auto R = team.template rows<2>();
  linear_domain_forward<Pack>(team, team.template rows<0>(), team.template rows<1>(), T,
                              [&](Slot s) { return R[s]; });
  for (int w = 0; w < W; ++w) {
    if (!(linear >> w & 1)) continue;
    const auto mats = mats_of(w);
    scalar.each([&](Slot s) {
      for (int j = 0; j < N; ++j) mats.R_row(s)[j] = R[s][j].v[w];
    });
    outcomes[w] = forward_violation<Real>(scalar, mats);
  }
  return linear;
}

}  // namespace sinkgrad::math
