#pragma once
// Per-matrix unrolled backward of every forward convention (forward/convention_forward.hpp),
// shared by the CPU and CUDA variants: the exact derivative of the computed forward, eps
// included.
//
// The replay is the log-space one of unrolled_math.hpp. With W = X ⊙ dL/dX, reversing
// X = Y / (Y.sum(axis) + eps) gives W_Y = W - X ⊙ (W summed along the axis, broadcast back):
// d log(s + eps) / d log Y = Y / (s + eps) = X, so eps changes the iterates but not the form.
// The iterates are exp(log B + f 1^T + 1 g^T), so only the potentials after every step are
// kept (2n(T + 1) Reals). The sweep ends with W = dL/d log B: that is dL/dM for B = exp(M);
// for tilekernels' B = S + eps (S = softmax_rows(M)), W_S = W ⊙ S / (S + eps) and then the
// softmax's own reverse, dL/dM = W_S - S ⊙ (W_S 1) 1^T.

#include "core/status.hpp"
#include "forward/convention_forward.hpp"

namespace sinkgrad::math {

// Workspace (Reals): the softmax's row normalisers and the potentials after every step.
SINKGRAD_HD constexpr long long convention_unrolled_workspace(int n, int T) {
  return static_cast<long long>(n) * (2LL * (T + 1) + 1);
}

// W -= X ⊙ (W summed along rows (rows = true) or columns, broadcast), X = exp(log B + f + g).
template <class Real>
SINKGRAD_HD void convention_step_back(const ConventionForward<Real>& c, const Real* M,
                                      const Real* lse, const Real* f, const Real* g, Real* W, int n,
                                      bool rows) {
  for (int a = 0; a < n; ++a) {
    Real sum = 0;
    for (int k = 0; k < n; ++k) sum += rows ? W[a * n + k] : W[k * n + a];
    for (int k = 0; k < n; ++k) {
      const int i = rows ? a : k, j = rows ? k : a;
      W[i * n + j] -= exp_of(log_base(c, M, lse, n, i, j) + f[i] + g[j]) * sum;
    }
  }
}

// dL/dM of the T-step forward of convention c for one matrix; grad doubles as the adjoint W.
// work: convention_unrolled_workspace(n, T) Reals.
template <class Real>
SINKGRAD_HD MatrixOutcome convention_unrolled_matrix(const ConventionForward<Real>& c,
                                                     const Real* M, const Real* G, Real* grad,
                                                     int n, int T, Real* work) {
  const int nn = n * n;
  if (!all_finite(M, nn) || !all_finite(G, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {SolveStatus::invalid_input, 0};
  }
  Real* lse = work;
  Real* F = lse + n;           // F + t n: f after step t, t = 0 .. T
  Real* Gp = F + (T + 1) * n;  // Gp + t n: g after step t
  if (c.softmax_base) row_logsumexp(M, n, lse);
  fill(F, n, Real(0));
  fill(Gp, n, Real(0));
  for (int t = 1; t <= T; ++t) {
    for (int k = 0; k < n; ++k) {
      F[t * n + k] = F[(t - 1) * n + k];
      Gp[t * n + k] = Gp[(t - 1) * n + k];
    }
    convention_step(c, M, lse, F + t * n, Gp + t * n, n, t);
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      grad[i * n + j] =
          exp_of(log_base(c, M, lse, n, i, j) + F[T * n + i] + Gp[T * n + j]) * G[i * n + j];
  // Step t's two normalisations in reverse; each one's output iterate is named by the
  // potentials after it.
  for (int t = T; t >= 1; --t) {
    const Real* f = F + t * n;
    const Real* g = Gp + t * n;
    if (c.rows_first) {
      convention_step_back(c, M, lse, f, g, grad, n, /*rows=*/false);
      if (step_has_rows(c, t)) convention_step_back(c, M, lse, f, g - n, grad, n, true);
    } else {
      convention_step_back(c, M, lse, f, g, grad, n, /*rows=*/true);
      convention_step_back(c, M, lse, f - n, g, grad, n, false);
    }
  }
  if (c.softmax_base) {
    for (int i = 0; i < n; ++i) {
      Real* W = grad + i * n;
      Real sum = 0;
      for (int j = 0; j < n; ++j) {
        const Real s = exp_of(M[i * n + j] - lse[i]);
        W[j] *= s / (s + c.eps);
        sum += W[j];
      }
      for (int j = 0; j < n; ++j) W[j] -= exp_of(M[i * n + j] - lse[i]) * sum;
    }
  }
  if (!all_finite(grad, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {SolveStatus::breakdown, T};
  }
  return {SolveStatus::ok, T};
}

}  // namespace sinkgrad::math
