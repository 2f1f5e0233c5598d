#pragma once
// Per-matrix `direct` solve: one frame (direct_solve) over a factorisation, here the small
// host/device ones of dense_factorisation.hpp (the GPU's; the CPU's Eigen factor is in
// eigen_direct.hpp).
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

// The direct solve of one matrix, the same frame for every factorisation: the marginals, S and
// b (schur_matrix.hpp), the factor's solve for beta, then alpha, the gradient and its
// projection. Factor holds the storage and the solve (WorkspaceFactor below; the CPU's Eigen
// one, eigen_direct.hpp): marginals() (4n), S() (n x n, row-major), b(), beta(), alpha(), tmp()
// (n each); corrected(n): beta = (S + 11^T/n)^-1 b, false where refused; plain(s_c, n, cut):
// beta = S^+ b, false where it failed or dropped more than one eigenvalue.
template <class Real, class Factor>
SINKGRAD_HD MatrixOutcome direct_solve(const Real* R, const Real* G, Real* grad, int n,
                                       SchurSystem system, Factor& f, GradientSide project) {
  const Marginals<Real> m = marginals_in(f.marginals(), n);
  if (!compute_marginals(R, G, n, m)) return fail_matrix(grad, n, SolveStatus::invalid_input);
  schur_matrix(system, R, m, n, f.S());
  schur_rhs(system, R, m, n, f.tmp(), f.b());
  PlainCut cut;
  const bool solved = system == SchurSystem::corrected ? f.corrected(n) : f.plain(m.s_c, n, cut);
  if (!solved) return fail_matrix(grad, n, SolveStatus::breakdown);
  schur_alpha(system, R, m, f.beta(), n, f.alpha());
  assemble_gradient(R, G, f.alpha(), f.beta(), n, grad);
  project_gradient(R, grad, n, project);
  if (!all_finite(grad, n * n)) return fail_matrix(grad, n, SolveStatus::breakdown);
  return {cut.near_cut ? SolveStatus::ill_conditioned : SolveStatus::ok, 0};
}

// Workspace in Reals: marginals 4n, b, beta, alpha, tmp, 3n for the estimate, S (n^2) and, for
// the plain system, the eigenvectors (n^2).
SINKGRAD_HD int direct_workspace(int n, SchurSystem system) {
  return 11 * n + (system == SchurSystem::plain ? 2 : 1) * n * n;
}

// The factorisations of dense_factorisation.hpp in a workspace of direct_workspace Reals.
template <class Real>
struct WorkspaceFactor {
  Real* work;
  int n;
  SINKGRAD_HD Real* marginals() const { return work; }
  SINKGRAD_HD Real* b() const { return work + 4 * n; }
  SINKGRAD_HD Real* beta() const { return work + 5 * n; }
  SINKGRAD_HD Real* alpha() const { return work + 6 * n; }
  SINKGRAD_HD Real* tmp() const { return work + 7 * n; }
  SINKGRAD_HD Real* S() const { return work + 11 * n; }
  SINKGRAD_HD bool corrected(int) const {
    Real* const A = S();
    for (int k = 0; k < n * n; ++k) A[k] += Real(1) / Real(n);
    const Real norm = symmetric_norm_1(A, n);
    if (!cholesky_factor(A, n)) return false;
    if (!cholesky_conditioned(A, norm, n, work + 8 * n)) return false;
    for (int k = 0; k < n; ++k) beta()[k] = b()[k];
    cholesky_solve(A, beta(), n);
    return true;
  }
  SINKGRAD_HD bool plain(const Real* s_c, int, PlainCut& cut) const {
    Real* const V = S() + n * n;
    if (!jacobi_eigen(S(), V, n)) return false;
    // tmp = diag(lambda)^+ V^T b; the eigenvalues are S's diagonal now.
    cut = plain_pseudo_inverse(S(), n + 1, V, b(), s_c, tmp(), n);
    multiply(V, tmp(), beta(), n);
    return cut.dropped <= 1;
  }
};

template <class Real>
SINKGRAD_HD MatrixOutcome direct_matrix(const Real* R, const Real* G, Real* grad, int n,
                                        SchurSystem system, Real* work,
                                        GradientSide project = GradientSide::none) {
  WorkspaceFactor<Real> factor{work, n};
  return direct_solve(R, G, grad, n, system, factor, project);
}

}  // namespace sinkgrad::math
