#pragma once
// Truncated back-propagation through the Sinkhorn forward, for one matrix, on the CPU and on
// the GPU (every function is SINKGRAD_HD).
//
// The forward computes X_t = exp(M + f_t 1^T + 1 g_t^T) for t = 1..T (forward/log_domain.hpp).
// This gradient differentiates only the last k steps: the potentials f_{T-k}, g_{T-k} are held
// constant, so log X_{T-k} = M + constant and dL/dM is the log-space adjoint W_{T-k}:
//
//     W_T = R ⊙ G
//     for t = T, T-1, ..., T-k+1:                        (reverse step t)
//       W ← W − X_t ⊙ (W 1) 1^T                          (row normalisation, X_t row-stochastic)
//       W ← W − Y_t ⊙ 1 (1^T W)                          (column normalisation,
//                                                          Y_t = exp(M + f_{t-1} + g_t))
//     dL/dM ≈ W_{T-k}
//
// k = T is the exact unrolled gradient; k = 1 is "one-step differentiation". The size of what
// reverse step j adds, ||W_{T-j} − W_{T-j+1}||_F, is recorded as history entry j − 1: when it
// decays fast, a small k loses little.

#include "sinkgrad/per_matrix.hpp"

namespace truncated_unrolled {

// Workspace (in Reals) for k differentiated steps: f_{T-k..T}, g_{T-k+1..T} and n row sums.
SINKGRAD_HD long long workspace_reals(int n, int k) {
  return static_cast<long long>(n) * (2LL * k + 2);
}

// Steps actually differentiated: k, or all T when k > T.
SINKGRAD_HD int steps_back(int k, int T) {
  return k < T ? k : T;
}

// dL/dM for one matrix, differentiating the last min(k, T) of the T forward steps.
// work: workspace_reals(n, steps_back(k, T)) Reals. history: null, or k entries (NaN after the
// last step taken). Returns the status and the number of steps differentiated.
template <class Real>
SINKGRAD_HD sinkgrad::MatrixOutcome truncated_backward_matrix(const Real* M, const Real* G,
                                                              Real* grad, int n, int T, int k,
                                                              Real* work, Real* history) {
  using namespace sinkgrad::math;
  const int nn = n * n;
  const int steps = steps_back(k, T);
  if (history != nullptr) fill(history, k, quiet_nan<Real>());
  if (!all_finite(M, nn) || !all_finite(G, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {sinkgrad::SolveStatus::invalid_input, 0};
  }
  Real* f = work;                  // f_{T-k+s} at f + s n, s = 0..k
  Real* g = f + (steps + 1) * n;   // g_{T-k+s} at g + (s - 1) n, s = 1..k
  Real* row_sums = g + steps * n;  // W 1 of the current reverse step

  // Forward: steps 1..T-k only to reach f_{T-k} (g is scratch), then keep the last k.
  fill(f, n, Real(0));
  for (int t = 1; t <= T - steps; ++t) sinkhorn_step(M, f, g, f, n);
  for (int s = 1; s <= steps; ++s) sinkhorn_step(M, f + (s - 1) * n, g + (s - 1) * n, f + s * n, n);

  // W_T = R ⊙ G, R = exp(M + f_T + g_T).
  const Real* f_T = f + steps * n;
  const Real* g_T = g + (steps - 1) * n;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      grad[i * n + j] = exp_of(M[i * n + j] + f_T[i] + g_T[j]) * G[i * n + j];

  for (int s = steps; s >= 1; --s) {
    const Real* f_now = f + s * n;           // row potentials of X_t
    const Real* f_before = f + (s - 1) * n;  // row potentials of Y_t
    const Real* g_now = g + (s - 1) * n;     // column potentials of both
    for (int i = 0; i < n; ++i) {
      Real sum = 0;
      for (int j = 0; j < n; ++j) sum += grad[i * n + j];
      row_sums[i] = sum;
      for (int j = 0; j < n; ++j)
        grad[i * n + j] -= exp_of(M[i * n + j] + f_now[i] + g_now[j]) * sum;
    }
    Real change = 0;  // ||W_{t-1} − W_t||_F^2
    for (int j = 0; j < n; ++j) {
      Real column_sum = 0;
      for (int i = 0; i < n; ++i) column_sum += grad[i * n + j];
      for (int i = 0; i < n; ++i) {
        const Real by_columns = exp_of(M[i * n + j] + f_before[i] + g_now[j]) * column_sum;
        const Real by_rows = exp_of(M[i * n + j] + f_now[i] + g_now[j]) * row_sums[i];
        grad[i * n + j] -= by_columns;
        change += (by_rows + by_columns) * (by_rows + by_columns);
      }
    }
    if (history != nullptr) history[steps - s] = sqrt_of(change);
  }

  if (!all_finite(grad, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {sinkgrad::SolveStatus::breakdown, steps};
  }
  return {sinkgrad::SolveStatus::ok, steps};
}

}  // namespace truncated_unrolled
