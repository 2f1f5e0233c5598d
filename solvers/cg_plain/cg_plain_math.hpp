#pragma once
// Per-matrix plain implicit gradient (assumes r = c = 1) by CG, host and device.
// Exact only when the forward has converged; otherwise it solves the "wrong" system on purpose:
// measuring that error is what the framework is for.

#include "solvers/cg/cg_math.hpp"
#include "solvers/cg/implicit_operators.hpp"

namespace sinkgrad::math {

enum class PlainSystem { schur, block };

SINKGRAD_HD int cg_plain_workspace(int n, PlainSystem system) {
  return system == PlainSystem::schur ? 11 * n : 14 * n;
}

template <class Real>
SINKGRAD_HD MatrixOutcome cg_plain_matrix(const Real* R, const Real* G, Real* grad, int n,
                                          PlainSystem system, CgSettings<Real> settings, Real* work,
                                          Real* history) {
  const Marginals<Real> m = marginals_in(work, n);
  if (!compute_marginals(R, G, n, m)) return fail_matrix(grad, n, SolveStatus::invalid_input);
  Real* rest = work + 4 * n;
  MatrixOutcome outcome;
  if (system == PlainSystem::schur) {
    Real* b = rest;
    Real* beta = rest + n;
    Real* alpha = rest + 2 * n;
    Real* tmp = rest + 3 * n;
    schur_rhs(SchurSystem::plain, R, m, n, tmp, b);
    outcome = conjugate_gradient(PlainSchurOperator<Real>{R, n, tmp}, b, beta, n, settings,
                                 rest + 4 * n, history);
    schur_alpha(SchurSystem::plain, R, m, beta, n, alpha);
    if (outcome.status == SolveStatus::breakdown) return fail_matrix(grad, n, outcome.status);
    assemble_gradient(R, G, alpha, beta, n, grad);
  } else {
    Real* rhs = rest;  // [s_r; s_c]
    Real* x = rest + 2 * n;
    for (int k = 0; k < n; ++k) {
      rhs[k] = m.s_r[k];
      rhs[n + k] = m.s_c[k];
    }
    outcome = conjugate_gradient(PlainBlockOperator<Real>{R, n}, rhs, x, 2 * n, settings,
                                 rest + 4 * n, history);
    if (outcome.status == SolveStatus::breakdown) return fail_matrix(grad, n, outcome.status);
    assemble_gradient(R, G, x, x + n, n, grad);
  }
  if (!all_finite(grad, n * n)) return fail_matrix(grad, n, SolveStatus::breakdown);
  return outcome;
}

}  // namespace sinkgrad::math
