#pragma once
// Per-matrix Sinkhorn forward in the log domain, shared by the CPU and CUDA variants.
//
// The seeds' forward normalises columns, then rows, T times, starting from P = exp(M). Every
// iterate has the form X = exp(M + f 1^T + 1 g^T) with row potentials f and column potentials g,
// so one step is
//     g_j = -logsumexp_i(M_ij + f_i)      (column normalisation)
//     f_i = -logsumexp_j(M_ij + g_j)      (row normalisation)
// starting from f = 0. Working with potentials never forms exp(M) itself, so logits of any
// magnitude stay finite; R = exp(M + f_T + g_T) at the end, formed as the last row step's softmax
// (write_log_domain_line).

#include "core/host_device.hpp"
#include "kernels/numeric.hpp"

namespace sinkgrad::math {

// -logsumexp over column j of (M + f 1^T).
template <class Real>
SINKGRAD_HD Real column_potential(const Real* M, const Real* f, int n, int j) {
  Real top = M[j] + f[0];
  for (int i = 1; i < n; ++i) top = max_of(top, M[i * n + j] + f[i]);
  Real sum = 0;
  for (int i = 0; i < n; ++i) sum += exp_of(M[i * n + j] + f[i] - top);
  return -(top + log_of(sum));
}

// -logsumexp over row i of (M + 1 g^T).
template <class Real>
SINKGRAD_HD Real row_potential(const Real* M, const Real* g, int n, int i) {
  const Real* row = M + i * n;
  Real top = row[0] + g[0];
  for (int j = 1; j < n; ++j) top = max_of(top, row[j] + g[j]);
  Real sum = 0;
  for (int j = 0; j < n; ++j) sum += exp_of(row[j] + g[j] - top);
  return -(top + log_of(sum));
}

// One Sinkhorn iteration: g from f_prev (columns), then f from g (rows). f may alias f_prev.
template <class Real>
SINKGRAD_HD void sinkhorn_step(const Real* M, const Real* f_prev, Real* g, Real* f, int n) {
  for (int j = 0; j < n; ++j) g[j] = column_potential(M, f_prev, n, j);
  for (int i = 0; i < n; ++i) f[i] = row_potential(M, g, n, i);
}

// R[k] = exp(L(k) + own) / guard(sum_j exp(L(j) + own)), k < n: a line's last normalisation
// in the log domain, with L(k) = log B + the other side's potential, own the line's potential
// from the step before and guard(x) = max(x, eps) (max_guard) or x + eps. Computed as
// exp(L(k) - top) / guard'(sum_j exp(L(j) - top)), top = max_j L(j), with eps exp(-(top + own))
// in guard' for eps: for logits past about 1e10 (float32) or 1e20 (float64), L + own is rounded
// by more than 1 and exp(L + own) overflows or underflows (0 / 0, inf / inf), while this sum is
// at least 1. Without eps own cancels: the line is the softmax of L. cap: the loops' compile-time
// bound for a team's registers (unrolled_cap), 0: n, rolled.
template <class Real, int cap = 0, class Row, class Logit>
SINKGRAD_HD void write_log_domain_line(const Row& R, int n, const Logit& L, Real own, Real eps = 0,
                                       bool max_guard = false) {
  Real top = L(0);
  SINKGRAD_UNROLL
  for (int k = 1; k < (cap > 0 ? cap : n); ++k) {
    if (k >= n) break;
    top = max_of(top, L(k));
  }
  Real sum = 0;
  SINKGRAD_UNROLL
  for (int k = 0; k < (cap > 0 ? cap : n); ++k) {
    if (k >= n) break;
    sum += exp_of(L(k) - top);
  }
  const Real eps_term = eps == Real(0) ? Real(0) : eps * exp_of(-(top + own));
  const Real inverse = Real(1) / (max_guard ? max_of(sum, eps_term) : sum + eps_term);
  SINKGRAD_UNROLL
  for (int k = 0; k < (cap > 0 ? cap : n); ++k) {
    if (k >= n) break;
    R[k] = exp_of(L(k) - top) * inverse;
  }
}

// max |sum - 1| over the rows (Columns = false) or the columns of R: how far a forward is from
// doubly stochastic on the side its last step leaves inexact. The side is a template argument
// so that each loop is as plain as a hand-written one: with the choice inside the loop the
// CPU forward was slower (measured: docs/benchmarks-cpu.md).
template <bool Columns, class Real>
SINKGRAD_HD Real line_violation(const Real* R, int n) {
  Real worst = 0;
  for (int a = 0; a < n; ++a) {
    Real sum = 0;
    for (int k = 0; k < n; ++k) sum += Columns ? R[k * n + a] : R[a * n + k];
    worst = max_of(worst, abs_of(sum - Real(1)));
  }
  return worst;
}

// The same for a side chosen at run time (every convention's drivers).
template <class Real>
SINKGRAD_HD Real marginal_violation(const Real* R, int n, bool columns) {
  return columns ? line_violation<true>(R, n) : line_violation<false>(R, n);
}

// max_j |sum_i R_ij - 1| of this forward, whose rows are exact.
template <class Real>
SINKGRAD_HD Real column_violation(const Real* R, int n) {
  return line_violation<true>(R, n);
}

// The T-step forward of one matrix. work holds 2n values. Returns false (R = NaN) when the
// logits are not all finite.
template <class Real>
SINKGRAD_HD bool sinkhorn_forward_matrix(const Real* M, int n, int T, Real* R, Real* work) {
  if (!all_finite(M, n * n)) {
    fill(R, n * n, quiet_nan<Real>());
    return false;
  }
  Real* f = work;
  Real* g = work + n;
  fill(f, n, Real(0));
  for (int t = 1; t < T; ++t) sinkhorn_step(M, f, g, f, n);
  for (int j = 0; j < n; ++j) g[j] = column_potential(M, f, n, j);
  // The last row step is R's own normalisation.
  for (int i = 0; i < n; ++i)
    write_log_domain_line<Real>(
        R + i * n, n, [&](int j) { return M[i * n + j] + g[j]; }, f[i]);
  return true;
}

}  // namespace sinkgrad::math
