#pragma once
// `unrolled` on the CPU for W matrices at once, one per SIMD lane (kernels/lanes.hpp): the
// linear-domain replay of unrolled_team.hpp (LinearReplay, replay_in_reverse), run by a CpuTeam
// whose Real is Lanes<Real, W>, so each lane gets the bits the scalar team gets for its matrix.
// unrolled_team's decisions are taken per matrix with the scalar team (a finite G, the linear
// domain's spread test, a finite gradient); a matrix that fails one is left to the caller, which
// solves it with unrolled_team (its log-domain replay, or its failure status).

#include "forward/forward_lanes.hpp"
#include "kernels/lanes.hpp"
#include "solvers/unrolled/unrolled_team.hpp"

namespace sinkgrad::math {

// The tape's segment length: every step while the tape fits 2^16 Lanes (2 MiB a thread), else
// the longest segment that fits, else the one of the smallest tape; a checkpointed tape gives
// the same bits (replay_in_reverse), W times the scalar tape would not.
inline int unrolled_lanes_segment(int n, int T) {
  return unrolled_segment_or_smallest(n, T, 1LL << 16);
}

// Lanes<Real, W> a group needs: P, its columns, P̄ and G (n^2 each), and the tape (segment L).
inline long long unrolled_lanes_workspace(int n, int T, int L) {
  return 4LL * n * n + unrolled_workspace(n, T, L);
}

// dL/dM of the T-step seeds' forward for W matrices of n = N: mats_of(w) gives lane w's
// CpuLogitMatrices as the scalar team reads them (transposed for rows_first). work:
// unrolled_lanes_workspace(N, T, L) Lanes; scalar_work: 2 N^2 Reals. Returns the lanes whose
// gradient it wrote (bit w: status ok after T iterations); the caller solves the others.
template <int N, class Real, int W, class MatricesOf>
unsigned unrolled_lanes(MatricesOf mats_of, int T, int L, Lanes<Real, W>* work, Real* scalar_work) {
  using Pack = Lanes<Real, W>;
  constexpr int nn = N * N;
  // P's rows and columns per matrix by the scalar set-up (pack_linear_rows).
  const CpuTeam<Real, N, N> scalar(N, scalar_work);
  Pack* const packed = work;  // P, its columns, P̄ (the lanes team's rows<0..2>()), then G
  Pack* const G_packed = work + 3 * nn;
  unsigned linear = 0;
  for (int w = 0; w < W; ++w) {
    const auto mats = mats_of(w);
    const bool on =
        pack_linear_rows(scalar, mats, grad_output_finite<Real>(scalar, mats), w, packed);
    if (on) linear |= 1u << w;
    scalar.each([&](Slot s) {
      for (int j = 0; j < N; ++j) G_packed[s.i * N + j].v[w] = on ? mats.G_row(s)[j] : Real(0);
    });
  }
  if (linear == 0) return 0;

  using Team = CpuTeam<Pack, N, N>;
  const Team team(N, packed, work + 4 * nn);
  const CpuLogitMatrices<Pack> lanes_mats{{nullptr, G_packed, nullptr, N}};
  auto P_lanes = team.template rows<0>();
  auto Pbar = team.template rows<2>();
  LinearReplay<Pack, Team, decltype(lanes_mats), decltype(P_lanes)> replay{
      team, lanes_mats, P_lanes, {P_lanes, team.template rows<1>()}, Pbar, {}, {}};
  replay_in_reverse<Pack>(team, T, L, replay);

  // grad = P ⊙ P̄, kept where every entry is finite (write_if_finite, per lane; the caller
  // overwrites the others).
  return write_finite_lanes<N, W>(scalar, mats_of, linear, [&](Slot s, int j, int w) {
    return P_lanes[s][j].v[w] * Pbar[s][j].v[w];
  });
}

}  // namespace sinkgrad::math
