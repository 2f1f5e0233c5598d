#pragma once
// Per-matrix corrected implicit gradient by CG, host and device: the Schur complement built
// from the actual marginals r, c. S = diag(c) - R^T diag(r)^-1 R is symmetric positive
// semi-definite with S 1 = 0 and the right-hand side is orthogonal to 1, so CG from 0 stays
// in range(S) and converges in at most n - 1 steps in exact arithmetic.

#include "solvers/cg/cg_math.hpp"
#include "solvers/cg/implicit_operators.hpp"

namespace sinkgrad::math {

SINKGRAD_HD int cg_corrected_workspace(int n) {
  return 11 * n;
}

template <class Real>
SINKGRAD_HD MatrixOutcome cg_corrected_matrix(const Real* R, const Real* G, Real* grad, int n,
                                              CgSettings<Real> settings, Real* work,
                                              Real* history) {
  const Marginals<Real> m = marginals_in(work, n);
  if (!compute_marginals(R, G, n, m)) return fail_matrix(grad, n, SolveStatus::invalid_input);
  Real* b = work + 4 * n;
  Real* beta = work + 5 * n;
  Real* alpha = work + 6 * n;
  Real* tmp = work + 7 * n;
  schur_rhs(SchurSystem::corrected, R, m, n, tmp, b);
  const MatrixOutcome outcome =
      conjugate_gradient(CorrectedSchurOperator<Real>{R, m.r, m.c, n, tmp}, b, beta, n, settings,
                         work + 8 * n, history);
  if (outcome.status == SolveStatus::breakdown) return fail_matrix(grad, n, outcome.status);
  schur_alpha(SchurSystem::corrected, R, m, beta, n, alpha);
  assemble_gradient(R, G, alpha, beta, n, grad);
  if (!all_finite(grad, n * n)) return fail_matrix(grad, n, SolveStatus::breakdown);
  return outcome;
}

}  // namespace sinkgrad::math
