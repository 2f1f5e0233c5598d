#pragma once
// Per-matrix unrolled backward of every forward convention (forward/convention_forward.hpp),
// one matrix at a time, shared by the CPU and CUDA variants above the team sizes: the exact
// derivative of the computed forward, eps included.
//
// Every iterate is X = exp(log B + f 1^T + 1 g^T) (B the convention's base), so the adjoint is
// propagated in log space: W = X ⊙ dL/dX, the gradient with respect to log X. Reversing
// X = Y / (Y.sum(axis) + eps) gives W_Y = W - X ⊙ (W summed along the axis, broadcast back):
// d log(s + eps) / d log Y = Y / (s + eps) = X, so eps changes the iterates but not the form;
// under max(s, eps) a line whose denominator was eps leaves W as it is (the branch taken is
// differentiated, as autograd does). W stays bounded for logits of any magnitude, and the replay
// needs only the potentials, n numbers a side per step. The sweep ends with W = dL/d log B,
// which convention_base_back takes to dL/dM.
//
// When the workspace cannot hold the potentials of all T steps (GPU shared memory), both
// potentials are kept at checkpoints every L steps and one segment of L steps is recomputed at
// a time; the recomputation repeats the forward's operations, so every L gives the same bits.

#include "core/log_base_chain.hpp"  // through_abs_base
#include "core/status.hpp"
#include "forward/convention_forward.hpp"
#include "solvers/unrolled/replay_tape.hpp"  // normalised_entry

namespace sinkgrad::math {

// Workspace (Reals) for segment length L: the softmax's row normalisers, both potentials after
// steps L, 2L, .. up to the last segment's start, and one segment's potentials (before its
// first step and after each).
SINKGRAD_HD constexpr long long convention_unrolled_workspace(int n, int T, int L) {
  const long long segments = (T + L - 1) / L;
  return static_cast<long long>(n) * (1 + 2 * (segments - 1) + 2 * (L + 1LL));
}

// The longest segment (fewest recomputations) whose workspace fits capacity Reals; 0 if none.
SINKGRAD_HD int convention_unrolled_segment(int n, int T, long long capacity) {
  if (convention_unrolled_workspace(n, T, T) <= capacity) return T;
  int best = 0;
  for (int L = 1; L < T; ++L)
    if (convention_unrolled_workspace(n, T, L) <= capacity) best = L;
  return best;
}

// W -= X ⊙ (W summed along rows (rows = true) or columns, broadcast), X = exp(log B + f + g),
// for every line whose denominator was its sum; old: that side's potentials before the step
// (read only under max(s, eps), to find the lines whose denominator was the constant eps).
template <class Real>
SINKGRAD_HD void convention_step_back(const ConventionForward<Real>& c, const Real* M,
                                      const Real* lse, const Real* f, const Real* g,
                                      const Real* old, Real* W, int n, bool rows) {
  for (int a = 0; a < n; ++a) {
    if (c.max_guard &&
        guard_takes_eps(c, old[a], line_logsumexp(c, M, lse, rows ? g : f, n, a, !rows)))
      continue;
    Real sum = 0;
    for (int k = 0; k < n; ++k) sum += rows ? W[a * n + k] : W[k * n + a];
    for (int k = 0; k < n; ++k) {
      const int i = rows ? a : k, j = rows ? k : a;
      W[i * n + j] -= normalised_entry(log_base(c, M, lse, n, i, j), f[i], g[j], rows) * sum;
    }
  }
}

// W = dL/d log B into dL/dM, in place: the softmax's reverse (W_S = W ⊙ S / (S + eps), then
// W_S - S ⊙ (W_S 1) 1^T), |M|'s (W sign(M) / (|M| + eps)), or a shift's (its maximum entry
// takes minus the sum of W over the line or matrix it shifts; the first maximum, as ties do not
// occur in real logits).
template <class Real>
SINKGRAD_HD void convention_base_back(const ConventionForward<Real>& c, const Real* M,
                                      const Real* lse, Real* W, int n) {
  if (c.softmax_base) {
    for (int i = 0; i < n; ++i) {
      Real* row = W + i * n;
      Real sum = 0;
      for (int j = 0; j < n; ++j) {
        const Real s = exp_of(M[i * n + j] - lse[i]);
        row[j] *= s / (s + c.eps);
        sum += row[j];
      }
      for (int j = 0; j < n; ++j) row[j] -= exp_of(M[i * n + j] - lse[i]) * sum;
    }
  } else if (c.abs_base) {
    for (int k = 0; k < n * n; ++k) W[k] = through_abs_base(M[k], W[k], c.eps);
  } else if (c.shift != BaseShift::none) {
    const bool global = c.shift == BaseShift::global_max;
    const bool columns = c.shift == BaseShift::column_max;
    const int lines = global ? 1 : n, count = global ? n * n : n;
    for (int a = 0; a < lines; ++a) {
      // line a: M[first + k stride], k < count
      const int first = global ? 0 : columns ? a : a * n, stride = columns ? n : 1;
      Real sum = 0;
      int top = 0;
      for (int k = 0; k < count; ++k) {
        sum += W[first + k * stride];
        if (M[first + k * stride] > M[first + top * stride]) top = k;
      }
      W[first + top * stride] -= sum;
    }
  }
}

// Steps start + 1 .. end of the forward into a segment's potentials: F + k n and Gp + k n after
// step start + k, from F and Gp (k = 0) on.
template <class Real>
SINKGRAD_HD void convention_segment(const ConventionForward<Real>& c, const Real* M,
                                    const Real* lse, Real* F, Real* Gp, int n, int start, int end) {
  for (int t = start + 1; t <= end; ++t) {
    Real* f = F + (t - start) * n;
    Real* g = Gp + (t - start) * n;
    for (int k = 0; k < n; ++k) {
      f[k] = f[k - n];
      g[k] = g[k - n];
    }
    convention_step(c, M, lse, f, g, n, t);
  }
}

// dL/dM of the T-step forward of convention c for one matrix; grad doubles as the adjoint W.
// segment L from convention_unrolled_segment (T: no recomputation); work:
// convention_unrolled_workspace(n, T, L) Reals.
template <class Real>
SINKGRAD_HD MatrixOutcome convention_unrolled_matrix(const ConventionForward<Real>& c,
                                                     const Real* M, const Real* G, Real* grad,
                                                     int n, int T, int L, Real* work) {
  const int nn = n * n;
  if (!all_finite(M, nn) || !all_finite(G, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {SolveStatus::invalid_input, 0};
  }
  const int segments = (T + L - 1) / L;
  const int last_start = (segments - 1) * L;
  Real* lse = work;
  Real* checkpoints = lse + n;                     // f, g after step s L, s = 1 .. segments - 1
  Real* F = checkpoints + 2 * (segments - 1) * n;  // F + k n: f after step start + k
  Real* Gp = F + (L + 1) * n;                      // Gp + k n: g after step start + k
  base_normalisers(c, M, n, lse);
  fill(F, n, Real(0));
  fill(Gp, n, Real(0));
  for (int s = 0; s + 1 < segments; ++s) {
    convention_segment(c, M, lse, F, Gp, n, s * L, (s + 1) * L);
    for (int k = 0; k < n; ++k) {
      F[k] = checkpoints[2 * s * n + k] = F[L * n + k];
      Gp[k] = checkpoints[(2 * s + 1) * n + k] = Gp[L * n + k];
    }
  }
  convention_segment(c, M, lse, F, Gp, n, last_start, T);
  const Real* f_T = F + (T - last_start) * n;
  const Real* g_T = Gp + (T - last_start) * n;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      grad[i * n + j] =
          normalised_entry(log_base(c, M, lse, n, i, j), f_T[i], g_T[j], !c.rows_first) *
          G[i * n + j];
  for (int s = segments - 1; s >= 0; --s) {
    const int start = s * L;
    const int end = start + L < T ? start + L : T;
    if (s != segments - 1) {  // recompute this segment from its checkpoint
      for (int k = 0; k < n; ++k) {
        F[k] = s == 0 ? Real(0) : checkpoints[2 * (s - 1) * n + k];
        Gp[k] = s == 0 ? Real(0) : checkpoints[(2 * s - 1) * n + k];
      }
      convention_segment(c, M, lse, F, Gp, n, start, end);
    }
    // Step t's two normalisations in reverse; each one's output iterate is named by the
    // potentials after it.
    for (int t = end; t > start; --t) {
      const Real* f = F + (t - start) * n;
      const Real* g = Gp + (t - start) * n;
      if (c.rows_first) {
        convention_step_back(c, M, lse, f, g, g - n, grad, n, /*rows=*/false);
        if (step_has_rows(c, t)) convention_step_back(c, M, lse, f, g - n, f - n, grad, n, true);
      } else {
        convention_step_back(c, M, lse, f, g, f - n, grad, n, /*rows=*/true);
        convention_step_back(c, M, lse, f - n, g, g - n, grad, n, false);
      }
    }
  }
  convention_base_back(c, M, lse, grad, n);
  if (!all_finite(grad, nn)) {
    fill(grad, nn, quiet_nan<Real>());
    return {SolveStatus::breakdown, T};
  }
  return {SolveStatus::ok, T};
}

}  // namespace sinkgrad::math
