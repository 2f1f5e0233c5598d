#pragma once
// The CPU `direct` by Eigen: the corrected system by Cholesky (refused below a reciprocal
// condition estimate of 10 n eps), the plain one by a symmetric eigendecomposition and the
// pseudo-inverse of plain_cut.hpp. The CPU solver runs it above the team form's sizes and for
// the plain system; the tests take it as the reference factorisation of the team form.

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "solvers/common/implicit_math.hpp"
#include "solvers/direct/plain_cut.hpp"
#include "solvers/direct/schur_matrix.hpp"

namespace sinkgrad::math {

// Per-thread factorisation objects, sized once and reused for every matrix.
template <class Real>
struct DenseWorkspace {
  using Matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Vector = Eigen::Matrix<Real, Eigen::Dynamic, 1>;
  explicit DenseWorkspace(int n)
      : S(n, n), b(n), beta(n), alpha(n), tmp(n), marginals(4 * n), cholesky(n), eigen(n) {}
  Matrix S;
  Vector b, beta, alpha, tmp, marginals;
  Eigen::LLT<Matrix> cholesky;
  Eigen::SelfAdjointEigenSolver<Matrix> eigen;
};

template <class Real>
bool solve_corrected(DenseWorkspace<Real>& w, int n) {
  const Real eps = Epsilon<Real>::value;
  w.S.array() += Real(1) / Real(n);
  w.cholesky.compute(w.S);
  if (w.cholesky.info() != Eigen::Success || !(w.cholesky.rcond() >= Real(10 * n) * eps))
    return false;
  w.beta = w.cholesky.solve(w.b);
  return true;
}

// The cut and its near-cut test are plain_pseudo_inverse's, the same code as the GPU's.
template <class Real>
bool solve_plain(DenseWorkspace<Real>& w, const Real* s_c, int n, bool& near_cut) {
  w.eigen.compute(w.S, Eigen::ComputeEigenvectors);
  if (w.eigen.info() != Eigen::Success) return false;
  // Eigen keeps the eigenvectors column-major whatever S is: copy them into S (no longer
  // needed), which is row-major as plain_pseudo_inverse reads them.
  w.S = w.eigen.eigenvectors();
  const PlainCut cut = plain_pseudo_inverse(w.eigen.eigenvalues().data(), 1, w.S.data(), w.b.data(),
                                            s_c, w.tmp.data(), n);
  w.beta.noalias() = w.S * w.tmp;
  near_cut = cut.near_cut;
  return cut.dropped <= 1;
}

template <class Real>
MatrixOutcome eigen_direct_matrix(const Real* R, const Real* G, Real* grad, int n,
                                  SchurSystem system, DenseWorkspace<Real>& w,
                                  GradientSide project = GradientSide::none) {
  const auto m = marginals_in(w.marginals.data(), n);
  if (!compute_marginals(R, G, n, m)) return fail_matrix(grad, n, SolveStatus::invalid_input);
  schur_matrix(system, R, m, n, w.S.data());
  schur_rhs(system, R, m, n, w.tmp.data(), w.b.data());
  bool near_cut = false;
  const bool solved =
      system == SchurSystem::corrected ? solve_corrected(w, n) : solve_plain(w, m.s_c, n, near_cut);
  if (!solved) return fail_matrix(grad, n, SolveStatus::breakdown);
  schur_alpha(system, R, m, w.beta.data(), n, w.alpha.data());
  assemble_gradient(R, G, w.alpha.data(), w.beta.data(), n, grad);
  project_gradient(R, grad, n, project);
  if (!all_finite(grad, n * n)) return fail_matrix(grad, n, SolveStatus::breakdown);
  return {near_cut ? SolveStatus::ill_conditioned : SolveStatus::ok, 0};
}

}  // namespace sinkgrad::math
