#pragma once
// Quantities shared by the implicit solvers (CG and direct), per matrix, host and device.
//
// Every implicit solver writes dL/dM = R ⊙ (G - α 1^T - 1 β^T) and differs only in how it finds
// (α, β). Shared inputs: the marginals r = R 1, c = R^T 1 and s_r = (R ⊙ G) 1, s_c = (R ⊙ G)^T 1.

#include "core/status.hpp"
#include "kernels/numeric.hpp"
#include "solvers/common/invariant_side.hpp"

namespace sinkgrad::math {

template <class Real>
struct Marginals {
  Real* r;    // row sums of R
  Real* c;    // column sums of R
  Real* s_r;  // row sums of R ⊙ G
  Real* s_c;  // column sums of R ⊙ G
};

// Carves the four marginal vectors out of work (4n Reals).
template <class Real>
SINKGRAD_HD Marginals<Real> marginals_in(Real* work, int n) {
  return {work, work + n, work + 2 * n, work + 3 * n};
}

// Checks R and G (finite, R >= 0, no zero row or column of R) and computes the marginals.
// Returns false for invalid input.
template <class Real>
SINKGRAD_HD bool compute_marginals(const Real* R, const Real* G, int n, Marginals<Real> m) {
  fill(m.c, n, Real(0));
  fill(m.s_c, n, Real(0));
  for (int i = 0; i < n; ++i) {
    Real r = 0, s = 0;
    for (int j = 0; j < n; ++j) {
      const Real x = R[i * n + j];
      const Real g = G[i * n + j];
      if (!is_finite(x) || !is_finite(g) || x < Real(0)) return false;
      r += x;
      s += x * g;
      m.c[j] += x;
      m.s_c[j] += x * g;
    }
    m.r[i] = r;
    m.s_r[i] = s;
  }
  for (int k = 0; k < n; ++k)
    if (!(m.r[k] > Real(0)) || !(m.c[k] > Real(0))) return false;
  return true;
}

// y = R x
template <class Real>
SINKGRAD_HD void multiply(const Real* R, const Real* x, Real* y, int n) {
  for (int i = 0; i < n; ++i) {
    Real sum = 0;
    for (int j = 0; j < n; ++j) sum = fma_of(R[i * n + j], x[j], sum);
    y[i] = sum;
  }
}

// y = R^T x
template <class Real>
SINKGRAD_HD void multiply_transposed(const Real* R, const Real* x, Real* y, int n) {
  fill(y, n, Real(0));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) y[j] = fma_of(R[i * n + j], x[i], y[j]);
}

template <class Real>
SINKGRAD_HD Real dot(const Real* x, const Real* y, int n) {
  Real sum = 0;
  for (int k = 0; k < n; ++k) sum += x[k] * y[k];
  return sum;
}

// grad = R ⊙ (G - α 1^T - 1 β^T)
template <class Real>
SINKGRAD_HD void assemble_gradient(const Real* R, const Real* G, const Real* alpha,
                                   const Real* beta, int n, Real* grad) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      grad[i * n + j] = R[i * n + j] * (G[i * n + j] - alpha[i] - beta[j]);
}

// team_project_gradient's projection in one thread, with its operations in its order, so that
// the one-thread forms give the team forms' bits.
template <class Real>
SINKGRAD_HD void project_gradient(const Real* R, Real* grad, int n, GradientSide side) {
  if (side == GradientSide::none) return;
  const bool rows = side == GradientSide::rows;
  for (int a = 0; a < n; ++a) {
    // Line a (a row, or a column): entry k at a * along + k * across.
    const int along = rows ? n : 1, across = rows ? 1 : n;
    Real sum = 0, weight = 0;
    for (int k = 0; k < n; ++k) {
      sum += grad[a * along + k * across];
      weight += R[a * along + k * across];
    }
    const Real shift = sum / weight;
    for (int k = 0; k < n; ++k)
      grad[a * along + k * across] =
          fma_of(-shift, R[a * along + k * across], grad[a * along + k * across]);
  }
}

// A failed matrix gets NaN everywhere (its status says why), never a plausible-looking value.
template <class Real>
SINKGRAD_HD MatrixOutcome fail_matrix(Real* grad, int n, SolveStatus status, int iterations = 0) {
  fill(grad, n * n, quiet_nan<Real>());
  return {status, iterations};
}

// Right-hand side and back-substitution of the two Schur-complement systems for β.
//   plain:     (I - R^T R) β = s_c - R^T s_r,                 α = s_r - R β
//   corrected: (diag(c) - R^T diag(r)^-1 R) β = s_c - R^T diag(r)^-1 s_r,
//                                                             α = diag(r)^-1 (s_r - R β)
enum class SchurSystem { plain, corrected };

template <class Real>
SINKGRAD_HD void schur_rhs(SchurSystem system, const Real* R, Marginals<Real> m, int n, Real* tmp,
                           Real* b) {
  for (int i = 0; i < n; ++i) tmp[i] = system == SchurSystem::plain ? m.s_r[i] : m.s_r[i] / m.r[i];
  multiply_transposed(R, tmp, b, n);
  for (int j = 0; j < n; ++j) b[j] = m.s_c[j] - b[j];
}

template <class Real>
SINKGRAD_HD void schur_alpha(SchurSystem system, const Real* R, Marginals<Real> m, const Real* beta,
                             int n, Real* alpha) {
  multiply(R, beta, alpha, n);
  for (int i = 0; i < n; ++i) {
    alpha[i] = m.s_r[i] - alpha[i];
    if (system == SchurSystem::corrected) alpha[i] /= m.r[i];
  }
}

}  // namespace sinkgrad::math
