#pragma once
// Per-matrix unrolled backward: the exact derivative of the T-step forward that was computed,
// shared by the CPU and CUDA variants.
//
// Every iterate is X = exp(M + f 1^T + 1 g^T), so the adjoint is propagated in log space:
// W = X ⊙ dL/dX is the gradient with respect to log X. Reversing a row normalisation
// X_t = Y / rowsum(Y) gives W_Y = W - X_t ⊙ (W 1) 1^T; reversing a column normalisation
// Y = X / colsum(X) gives W_X = W_Y - Y ⊙ 1 (1^T W_Y). Since log X_0 = M, dL/dM = W_0.
// W stays bounded for logits of any magnitude, and replaying only needs the potentials
// (f_t, g_t), n numbers each per step, never an n x n matrix per step.
//
// When the workspace cannot hold all 2nT potentials (GPU shared memory), the replay stores f at
// checkpoints every L steps and recomputes one segment of L steps at a time.

#include "core/status.hpp"
#include "forward/log_domain.hpp"

namespace sinkgrad::math {

// Workspace (in Reals) for segment length L: checkpoints + one segment of f and g. The last
// segment runs on from the forward's state, so only the segments before it have a checkpoint
// (one vector less per side: at T = 20 that keeps the team kernels of the eps forwards at the
// default's occupancy, n = 4 and 16, float32).
SINKGRAD_HD long long unrolled_workspace(int n, int T, int L, bool two_sided = false) {
  const long long checkpoints = (T + L - 1) / L - 1;
  // two_sided: the team tapes of forwards with eps, both vectors at a checkpoint, and one vector
  // before the tape (convention_unrolled_team.hpp).
  const long long sides = two_sided ? 2 : 1;
  return static_cast<long long>(n) * (sides * checkpoints + 2LL * L + 1 + (two_sided ? 1 : 0));
}

// Longest segment (fewest recomputations) that fits into capacity Reals; 0 if none fits.
SINKGRAD_HD int unrolled_segment_length(int n, int T, long long capacity, bool two_sided = false) {
  if (unrolled_workspace(n, T, T, two_sided) <= capacity) return T;  // store all, no recompute
  int best = 0;
  for (int L = 1; L < T; ++L)
    if (unrolled_workspace(n, T, L, two_sided) <= capacity) best = L;
  return best;
}

// The longest segment that fits into capacity Reals, else the one of the smallest tape (which
// the caller then finds room for, or refuses).
SINKGRAD_HD int unrolled_segment_or_smallest(int n, int T, long long capacity,
                                             bool two_sided = false) {
  const int longest = unrolled_segment_length(n, T, capacity, two_sided);
  if (longest > 0) return longest;
  int smallest = 1;
  for (int L = 2; L <= T; ++L)
    if (unrolled_workspace(n, T, L, two_sided) < unrolled_workspace(n, T, smallest, two_sided))
      smallest = L;
  return smallest;
}

// Reverse one forward step t given f_{t-1}, g_t, f_t; W is updated in place.
template <class Real>
SINKGRAD_HD void unrolled_step_back(const Real* M, const Real* f_prev, const Real* g, const Real* f,
                                    Real* W, int n) {
  // Row normalisation: X_t = exp(M + f_t + g_t).
  for (int i = 0; i < n; ++i) {
    Real row_sum = 0;
    for (int j = 0; j < n; ++j) row_sum += W[i * n + j];
    for (int j = 0; j < n; ++j) W[i * n + j] -= exp_of(M[i * n + j] + f[i] + g[j]) * row_sum;
  }
  // Column normalisation: Y_t = exp(M + f_{t-1} + g_t).
  for (int j = 0; j < n; ++j) {
    Real column_sum = 0;
    for (int i = 0; i < n; ++i) column_sum += W[i * n + j];
    for (int i = 0; i < n; ++i)
      W[i * n + j] -= exp_of(M[i * n + j] + f_prev[i] + g[j]) * column_sum;
  }
}

// dL/dM of the T-step forward for one matrix. grad doubles as the adjoint W during the replay.
// segment: from unrolled_segment_length(); work: unrolled_workspace(n, T, segment) Reals.
template <class Real>
SINKGRAD_HD MatrixOutcome unrolled_backward_matrix(const Real* M, const Real* G, Real* grad, int n,
                                                   int T, int segment, Real* work) {
  const int nn = n * n;
  if (!all_finite(M, nn) || !all_finite(G, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {SolveStatus::invalid_input, 0};
  }
  const int L = segment;
  const int segments = (T + L - 1) / L;
  const int last_start = (segments - 1) * L;
  Real* checkpoints = work;                        // f at t = 0, L, .., last_start - L
  Real* seg_f = checkpoints + (segments - 1) * n;  // f at t = start .. start + L
  Real* seg_g = seg_f + (L + 1) * n;               // g at t = start + 1 .. start + L

  // Forward, keeping checkpoints and the whole last segment. Before the last segment seg_f[0]
  // and seg_g[0] serve as the running f and g.
  fill(seg_f, n, Real(0));
  if (segments > 1) fill(checkpoints, n, Real(0));
  for (int t = 1; t <= T; ++t) {
    const bool in_last = t > last_start;
    const Real* f_prev = in_last ? seg_f + (t - 1 - last_start) * n : seg_f;
    Real* g = in_last ? seg_g + (t - 1 - last_start) * n : seg_g;
    Real* f = in_last ? seg_f + (t - last_start) * n : seg_f;
    sinkhorn_step(M, f_prev, g, f, n);
    if (t % L == 0 && t / L < segments - 1)
      for (int i = 0; i < n; ++i) checkpoints[(t / L) * n + i] = f[i];
  }

  // Seed the adjoint: W = R ⊙ G with R = exp(M + f_T + g_T).
  const Real* f_T = seg_f + (T - last_start) * n;
  const Real* g_T = seg_g + (T - 1 - last_start) * n;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      grad[i * n + j] = exp_of(M[i * n + j] + f_T[i] + g_T[j]) * G[i * n + j];

  for (int s = segments - 1; s >= 0; --s) {
    const int start = s * L;
    const int end = start + L < T ? start + L : T;
    if (s != segments - 1) {  // recompute this segment from its checkpoint
      for (int i = 0; i < n; ++i) seg_f[i] = checkpoints[s * n + i];
      for (int t = start + 1; t <= end; ++t)
        sinkhorn_step(M, seg_f + (t - 1 - start) * n, seg_g + (t - 1 - start) * n,
                      seg_f + (t - start) * n, n);
    }
    for (int t = end; t > start; --t)
      unrolled_step_back(M, seg_f + (t - 1 - start) * n, seg_g + (t - 1 - start) * n,
                         seg_f + (t - start) * n, grad, n);
  }
  if (!all_finite(grad, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {SolveStatus::breakdown, T};
  }
  return {SolveStatus::ok, T};
}

}  // namespace sinkgrad::math
