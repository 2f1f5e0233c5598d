#pragma once
// The implicit formulas give dL/d(log B), the gradient with respect to the log of the forward's
// base B (docs/math.md, "Bases that are no scaling of exp(M)"). Where B is a diagonal scaling of
// exp(M) that is dL/dM on the side the forward sees; elsewhere it is carried to M by the base's
// own derivative, one row of one matrix at a time, written once for the host pass
// (core/backward_solver.cpp) and the CUDA kernel (kernels/cuda/log_base_chain.cu):
//   softmax_rows(M) + eps:  s = softmax(row), w = s / (s + eps),  g <- w g - s (w . g)
//   |M| + eps:              g <- g sign(M) / (|M| + eps)

#include "core/backward_problem.hpp"
#include "core/forward_spec.hpp"
#include "core/host_device.hpp"
#include "core/types.hpp"

namespace sinkgrad {

// Whether a solver writing dL/d(log B) needs the logits to finish its gradient under `spec`: the
// base is no diagonal scaling of exp(M). exp(M - shift) is one, and softmax_rows(M) without eps;
// softmax_rows(M) + eps and |M| + eps are not.
inline bool carries_log_base_gradient(const ForwardSpec& spec) {
  const ForwardBase base = forward_recipe(spec.convention).base;
  return base == ForwardBase::abs || (base == ForwardBase::softmax_rows && spec.eps != 0);
}

// One row of g (n entries, in place) from the same row of M, for base `base` with `eps`.
// A non-finite M leaves a non-finite g (the solvers have already marked that matrix). A finite g
// stays finite: the softmax's row is bounded by (1 + n) max |g|, and under |M| + eps the implicit
// g is R ⊙ (G - α 1ᵀ - 1 βᵀ) with R proportional to |M| + eps, which the division takes out.
template <class Real>
SINKGRAD_HD void carry_row_to_logits(ForwardBase base, Real eps, const Real* M, Real* g, int n) {
  if (base == ForwardBase::abs) {
    // d log(|m| + eps) / dm = 1 / (m + eps sign(m)); 0 at m = 0, where |m| has no slope.
    for (int k = 0; k < n; ++k) {
      const Real m = M[k];
      g[k] = m == Real(0) ? Real(0) : g[k] / (m + (m > Real(0) ? eps : -eps));
    }
    return;
  }
  // softmax_rows: the softmax is recomputed rather than stored, so any n fits a thread.
  Real top = M[0];
  for (int k = 1; k < n; ++k) top = M[k] > top ? M[k] : top;
  Real sum = 0;
  for (int k = 0; k < n; ++k) sum += math::exp_of(M[k] - top);
  const Real inverse = Real(1) / sum;
  const auto softmax = [&](int k) { return math::exp_of(M[k] - top) * inverse; };
  Real dot = 0;  // w . g
  for (int k = 0; k < n; ++k) {
    const Real s = softmax(k);
    dot += s / (s + eps) * g[k];
  }
  for (int k = 0; k < n; ++k) {
    const Real s = softmax(k);
    g[k] = s / (s + eps) * g[k] - s * dot;
  }
}

// Row `row` (b n + i) of a result, unless its matrix's gradient is already dL/dM (status
// fallback: unrolled's exact one).
template <class Real>
SINKGRAD_HD void carry_result_row(ForwardBase base, Real eps, BatchView<const Real> M,
                                  const BackwardResult<Real>& result, index_t row) {
  const int n = M.n;
  const index_t b = row / n;
  if (result.status[b] == SolveStatus::fallback) return;
  const index_t offset = row * n;
  carry_row_to_logits(base, eps, M.data + offset, result.grad_logits.data + offset, n);
}

}  // namespace sinkgrad
