#pragma once
// Conjugate gradients for one small symmetric system, host and device (Eigen's loop, in the
// shape of PETSc's KSP: stop on ||r|| <= tolerance ||b||, report why it stopped).

#include "core/forward_math.hpp"
#include "core/status.hpp"
#include "solvers/common/implicit_math.hpp"

namespace sinkgrad::math {

template <class Real>
struct CgSettings {
  int max_iterations;
  Real tolerance;  // relative to ||b||
};

// Solves A x = b from x = 0. work holds 3m Reals (r, p, Ap). history, when not null, receives
// ||r_k|| for k = 0 .. max_iterations (NaN after the last iteration performed).
template <class Real, class Operator>
SINKGRAD_HD MatrixOutcome conjugate_gradient(const Operator& A, const Real* b, Real* x, int m,
                                             CgSettings<Real> settings, Real* work, Real* history) {
  Real* r = work;
  Real* p = work + m;
  Real* Ap = work + 2 * m;
  if (history != nullptr) fill(history, settings.max_iterations + 1, quiet_nan<Real>());
  fill(x, m, Real(0));
  for (int k = 0; k < m; ++k) r[k] = p[k] = b[k];
  Real rr = dot(r, r, m);
  const Real threshold = settings.tolerance * settings.tolerance * rr;
  if (history != nullptr) history[0] = sqrt_of(rr);
  if (rr <= threshold) return {SolveStatus::ok, 0};  // includes b = 0
  for (int it = 1; it <= settings.max_iterations; ++it) {
    A.apply(p, Ap);
    const Real curvature = dot(p, Ap, m);
    if (curvature == Real(0) || !is_finite(curvature)) return {SolveStatus::breakdown, it - 1};
    const Real step = rr / curvature;
    for (int k = 0; k < m; ++k) {
      x[k] += step * p[k];
      r[k] -= step * Ap[k];
    }
    const Real rr_next = dot(r, r, m);
    if (history != nullptr) history[it] = sqrt_of(rr_next);
    if (!is_finite(rr_next)) return {SolveStatus::breakdown, it};
    if (rr_next <= threshold) return {SolveStatus::ok, it};
    const Real ratio = rr_next / rr;
    for (int k = 0; k < m; ++k) p[k] = r[k] + ratio * p[k];
    rr = rr_next;
  }
  return {SolveStatus::not_converged, settings.max_iterations};
}

}  // namespace sinkgrad::math
