#pragma once
// Per-matrix `direct` solve on the small host/device factorisations of dense_factorisation.hpp:
// the function the CPU variant computes with Eigen (direct_solver.cpp), for the GPU.
//   corrected: Cholesky of S + (1/n) 1 1^T, refused (breakdown) when it fails or when its
//              reciprocal condition estimate is below 10 n eps; the solution has 1^T beta = 0.
//   plain:     beta = S^+ b through a symmetric eigendecomposition, eigenvalues with
//              |lambda| <= n eps max|lambda| dropped; more than one dropped is a breakdown, an
//              eigenvalue near the cut that changes the gradient is ill_conditioned
//              (plain_cut.hpp).

#include "solvers/common/implicit_math.hpp"
#include "solvers/direct/dense_factorisation.hpp"
#include "solvers/direct/plain_cut.hpp"
#include "solvers/direct/schur_matrix.hpp"

namespace sinkgrad::math {

// Workspace in Reals: marginals 4n, b, beta, alpha, tmp, 3n for the estimate, S (n^2) and, for
// the plain system, the eigenvectors (n^2).
SINKGRAD_HD int direct_workspace(int n, SchurSystem system) {
  return 11 * n + (system == SchurSystem::plain ? 2 : 1) * n * n;
}

template <class Real>
SINKGRAD_HD MatrixOutcome direct_matrix(const Real* R, const Real* G, Real* grad, int n,
                                        SchurSystem system, Real* work,
                                        GradientSide project = GradientSide::none) {
  const Real eps = Epsilon<Real>::value;
  const Marginals<Real> m = marginals_in(work, n);
  Real* b = work + 4 * n;
  Real* beta = work + 5 * n;
  Real* alpha = work + 6 * n;
  Real* tmp = work + 7 * n;
  Real* scratch = work + 8 * n;  // 3n
  Real* S = work + 11 * n;
  if (!compute_marginals(R, G, n, m)) return fail_matrix(grad, n, SolveStatus::invalid_input);
  PlainCut cut;
  schur_matrix(system, R, m, n, S);
  schur_rhs(system, R, m, n, tmp, b);
  if (system == SchurSystem::corrected) {
    for (int k = 0; k < n * n; ++k) S[k] += Real(1) / Real(n);
    const Real norm = symmetric_norm_1(S, n);
    if (!cholesky_factor(S, n)) return fail_matrix(grad, n, SolveStatus::breakdown);
    if (!(cholesky_rcond(S, norm, n, scratch) >= Real(10 * n) * eps))
      return fail_matrix(grad, n, SolveStatus::breakdown);
    for (int k = 0; k < n; ++k) beta[k] = b[k];
    cholesky_solve(S, beta, n);
  } else {
    Real* V = S + n * n;
    if (!jacobi_eigen(S, V, n)) return fail_matrix(grad, n, SolveStatus::breakdown);
    // tmp = diag(lambda)^+ V^T b; the eigenvalues are S's diagonal now.
    cut = plain_pseudo_inverse(S, n + 1, V, b, m.s_c, tmp, n);
    multiply(V, tmp, beta, n);
    if (cut.dropped > 1) return fail_matrix(grad, n, SolveStatus::breakdown);
  }
  schur_alpha(system, R, m, beta, n, alpha);
  assemble_gradient(R, G, alpha, beta, n, grad);
  project_gradient(R, grad, n, project);
  if (!all_finite(grad, n * n)) return fail_matrix(grad, n, SolveStatus::breakdown);
  return {cut.near_cut ? SolveStatus::ill_conditioned : SolveStatus::ok, 0};
}

}  // namespace sinkgrad::math
