#pragma once
// The forward of every convention (core/forward_spec.hpp), one matrix at a time in the log
// domain, shared by the CPU and CUDA drivers and by the unrolled replay of those conventions.
//
// Every normalisation is a diagonal scaling, so every iterate is X = diag(e^f) B diag(e^g)
// with the convention's base B: exp(M - shift), softmax_rows(M) + eps (tilekernels, whose first
// row step is that softmax) or |M| + eps. Normalising columns with eps,
// X <- X / (X.sum(-2) + eps), changes only g: the current column sums are exp(g_j + L_j) with
// L_j = logsumexp_i(log B_ij + f_i), so
//     g_j <- g_j - log(exp(g_j + L_j) + eps)        (= -L_j when eps = 0),
// or g_j <- g_j - max(g_j + L_j, log eps) for max(X.sum(-2), eps); rows the same way for f.
// exp(M) itself is never formed: with eps > 0 the result depends on the scale of exp(M) (eps is
// added to sums of exp(M) as written), and the log domain keeps that scale exactly for logits
// of any magnitude, where a max-shift of M would change it.
// The seeds' convention without eps has its own faster team form (forward/forward_team.hpp).

#include "core/forward_spec.hpp"
#include "core/host_device.hpp"
#include "forward/log_domain.hpp"  // marginal_violation, write_log_domain_line
#include "kernels/numeric.hpp"
#include "kernels/team.hpp"  // StridedView

namespace sinkgrad::math {

template <class Real>
struct ConventionForward {
  bool rows_first;    // the first step normalises rows (forward_recipe's rows_first)
  bool softmax_base;  // tilekernels: B = softmax_rows(M) + eps stands for the first row step
  Real eps;
  Real log_eps;                       // log(eps); unused when eps = 0
  BaseShift shift = BaseShift::none;  // exp's base: B = exp(M - shift)
  bool abs_base = false;              // B = |M| + eps
  bool max_guard = false;             // denominators max(s, eps) rather than s + eps
};

template <class Real>
inline ConventionForward<Real> convention_forward(const ForwardSpec& spec) {
  const ForwardRecipe recipe = forward_recipe(spec.convention);
  const Real eps = static_cast<Real>(spec.eps);
  return {recipe.rows_first,
          recipe.base == ForwardBase::softmax_rows,
          eps,
          eps > Real(0) ? log_of(eps) : Real(0),
          recipe.base == ForwardBase::exp ? recipe.shift : BaseShift::none,
          recipe.base == ForwardBase::abs,
          recipe.guard == DenominatorGuard::max_eps};
}

// log(exp(a) + exp(b)) for finite a, b.
template <class Real>
SINKGRAD_HD Real log_add_exp(Real a, Real b) {
  return max_of(a, b) + log1p_of(exp_of(-abs_of(a - b)));
}

// The largest of x[0], x[stride], .. (count entries).
template <class Real>
SINKGRAD_HD Real max_entry(const Real* x, int count, int stride) {
  Real top = x[0];
  for (int k = 1; k < count; ++k) top = max_of(top, x[k * stride]);
  return top;
}

// lse[i] = logsumexp_j M_ij (the softmax base's row normaliser).
template <class Real>
SINKGRAD_HD void row_logsumexp(const Real* M, int n, Real* lse) {
  for (int i = 0; i < n; ++i) {
    const Real* row = M + i * n;
    Real top = row[0];
    for (int j = 1; j < n; ++j) top = max_of(top, row[j]);
    Real sum = 0;
    for (int j = 0; j < n; ++j) sum += exp_of(row[j] - top);
    lse[i] = top + log_of(sum);
  }
}

// The base's normalisers in lse: the softmax's row logsumexps, or exp's shift (the row
// maxima, the column maxima, or the global maximum in lse[0]).
template <class Real>
SINKGRAD_HD void base_normalisers(const ConventionForward<Real>& c, const Real* M, int n,
                                  Real* lse) {
  if (c.softmax_base) return row_logsumexp(M, n, lse);
  if (c.shift == BaseShift::none) return;
  if (c.shift != BaseShift::column_max)
    for (int i = 0; i < n; ++i) lse[i] = max_entry(M + i * n, n, 1);
  else
    for (int j = 0; j < n; ++j) lse[j] = max_entry(M + j, n, n);
  if (c.shift == BaseShift::global_max) lse[0] = max_entry(lse, n, 1);
}

// log B_ij. The softmax entry is exp(M_ij - lse_i); log(S + eps) = logaddexp(log S, log eps).
template <class Real>
SINKGRAD_HD Real log_base(const ConventionForward<Real>& c, const Real* M, const Real* lse, int n,
                          int i, int j) {
  const Real m = M[i * n + j];
  if (c.abs_base) return log_of(abs_of(m) + c.eps);
  if (c.softmax_base) {
    const Real log_s = m - lse[i];
    return c.eps == Real(0) ? log_s : log_add_exp(log_s, c.log_eps);
  }
  switch (c.shift) {
    case BaseShift::none:
      return m;
    case BaseShift::row_max:
      return m - lse[i];
    case BaseShift::column_max:
      return m - lse[j];
    case BaseShift::global_max:
      return m - lse[0];
  }
  return m;
}

// Whether a line whose sum is exp(old + L) takes max(s, eps)'s eps (its denominator is then a
// constant; equal counts as the sum, as torch's clamp passes the gradient there).
template <class Real>
SINKGRAD_HD bool guard_takes_eps(const ConventionForward<Real>& c, Real old, Real L) {
  return c.max_guard && c.eps > Real(0) && old + L < c.log_eps;
}

// The potential after dividing sums exp(old + L) by their guarded denominator.
template <class Real>
SINKGRAD_HD Real normalised_potential(const ConventionForward<Real>& c, Real old, Real L) {
  if (c.eps == Real(0)) return -L;
  if (c.max_guard) return guard_takes_eps(c, old, L) ? old - c.log_eps : -L;
  return old - log_add_exp(old + L, c.log_eps);
}

// log B_ij + the other side's potential at entry k of line a: row k of column a (columns) or
// column k of row a.
template <class Real>
SINKGRAD_HD Real line_entry(const ConventionForward<Real>& c, const Real* M, const Real* lse,
                            const Real* other, int n, int a, int k, bool columns) {
  return columns ? log_base(c, M, lse, n, k, a) + other[k]
                 : log_base(c, M, lse, n, a, k) + other[k];
}

// L = logsumexp over line a of log B + the other side's potential.
template <class Real>
SINKGRAD_HD Real line_logsumexp(const ConventionForward<Real>& c, const Real* M, const Real* lse,
                                const Real* other, int n, int a, bool columns) {
  Real top = line_entry(c, M, lse, other, n, a, 0, columns);
  for (int k = 1; k < n; ++k) top = max_of(top, line_entry(c, M, lse, other, n, a, k, columns));
  Real sum = 0;
  for (int k = 0; k < n; ++k) sum += exp_of(line_entry(c, M, lse, other, n, a, k, columns) - top);
  return top + log_of(sum);
}

// Column normalisation: g from f (and g's old value when eps > 0).
template <class Real>
SINKGRAD_HD void convention_columns(const ConventionForward<Real>& c, const Real* M,
                                    const Real* lse, const Real* f, Real* g, int n) {
  for (int j = 0; j < n; ++j)
    g[j] = normalised_potential(c, g[j], line_logsumexp(c, M, lse, f, n, j, true));
}

// Row normalisation: f from g (and f's old value when eps > 0).
template <class Real>
SINKGRAD_HD void convention_rows(const ConventionForward<Real>& c, const Real* M, const Real* lse,
                                 const Real* g, Real* f, int n) {
  for (int i = 0; i < n; ++i)
    f[i] = normalised_potential(c, f[i], line_logsumexp(c, M, lse, g, n, i, false));
}

// Whether step t (1-based) has a row normalisation of its own (tilekernels' first has not).
template <class Real>
SINKGRAD_HD bool step_has_rows(const ConventionForward<Real>& c, int t) {
  return !(c.softmax_base && t == 1);
}

// Step t of the forward on the potentials (f, g updated in place).
template <class Real>
SINKGRAD_HD void convention_step(const ConventionForward<Real>& c, const Real* M, const Real* lse,
                                 Real* f, Real* g, int n, int t) {
  if (c.rows_first) {
    if (step_has_rows(c, t)) convention_rows(c, M, lse, g, f, n);
    convention_columns(c, M, lse, f, g, n);
  } else {
    convention_columns(c, M, lse, f, g, n);
    convention_rows(c, M, lse, g, f, n);
  }
}

// Workspace (Reals) of convention_forward_matrix.
SINKGRAD_HD constexpr long long convention_forward_workspace(int n) {
  return 3LL * n;
}

// The T-step forward of one matrix; work holds convention_forward_workspace(n) Reals. The last
// normalisation is applied to the explicit iterate, R = Y / guard(Y.sum(axis)), so that the
// last axis' sums are exact to rounding whatever the logits' magnitude. Returns false (R = NaN)
// when the logits are not all finite.
template <class Real>
SINKGRAD_HD bool convention_forward_matrix(const ConventionForward<Real>& c, const Real* M, int n,
                                           int T, Real* R, Real* work) {
  if (!all_finite(M, n * n)) {
    fill(R, n * n, quiet_nan<Real>());
    return false;
  }
  Real* lse = work;
  Real* f = work + n;
  Real* g = work + 2 * n;
  base_normalisers(c, M, n, lse);
  fill(f, n, Real(0));
  fill(g, n, Real(0));
  for (int t = 1; t < T; ++t) convention_step(c, M, lse, f, g, n, t);
  if (c.rows_first) {
    if (step_has_rows(c, T)) convention_rows(c, M, lse, g, f, n);
  } else {
    convention_columns(c, M, lse, f, g, n);
  }
  // The last step's axis: columns (rows_first) or rows, each line normalised as a whole.
  const int outer_stride = c.rows_first ? 1 : n;
  const int inner_stride = c.rows_first ? n : 1;
  const Real* other = c.rows_first ? f : g;
  for (int a = 0; a < n; ++a) {
    // The line's logits written first, then normalised in place: log B (a logarithm per entry
    // for |M| + eps and the softmax base with eps) is evaluated once, not at every pass.
    const StridedView<Real> line{R + a * outer_stride, inner_stride};
    for (int k = 0; k < n; ++k)
      line[k] =
          (c.rows_first ? log_base(c, M, lse, n, k, a) : log_base(c, M, lse, n, a, k)) + other[k];
    write_log_domain_line<Real>(
        line, n, [&](int k) { return line[k]; }, c.rows_first ? g[a] : f[a], c.eps, c.max_guard);
  }
  return true;
}

}  // namespace sinkgrad::math
