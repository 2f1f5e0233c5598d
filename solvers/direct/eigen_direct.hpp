#pragma once
// The CPU `direct` by Eigen: the corrected system by Cholesky (refused below a reciprocal
// condition estimate of 10 n eps), the plain one by a symmetric eigendecomposition and the
// pseudo-inverse of plain_cut.hpp. The CPU solver runs it above the team form's sizes and for
// the plain system; the tests take it as the reference factorisation of the team form.

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "solvers/direct/direct_math.hpp"

namespace sinkgrad::math {

// Per-thread factorisation objects, sized once and reused for every matrix: direct_solve's
// Factor (direct_math.hpp) by Eigen's Cholesky and symmetric eigendecomposition.
template <class Real>
struct DenseWorkspace {
  using Matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Vector = Eigen::Matrix<Real, Eigen::Dynamic, 1>;
  explicit DenseWorkspace(int n)
      : S_(n, n), b_(n), beta_(n), alpha_(n), tmp_(n), marginals_(4 * n), cholesky(n), eigen(n) {}
  Real* marginals() { return marginals_.data(); }
  Real* S() { return S_.data(); }
  Real* b() { return b_.data(); }
  Real* beta() { return beta_.data(); }
  Real* alpha() { return alpha_.data(); }
  Real* tmp() { return tmp_.data(); }

  bool corrected(int n) {
    S_.array() += Real(1) / Real(n);
    cholesky.compute(S_);
    if (cholesky.info() != Eigen::Success ||
        !(cholesky.rcond() >= Real(10 * n) * Epsilon<Real>::value))
      return false;
    beta_ = cholesky.solve(b_);
    return true;
  }

  // The cut and its near-cut test are plain_pseudo_inverse's, the same code as the GPU's.
  bool plain(const Real* s_c, int n, PlainCut& cut) {
    eigen.compute(S_, Eigen::ComputeEigenvectors);
    if (eigen.info() != Eigen::Success) return false;
    // Eigen keeps the eigenvectors column-major whatever S is: copy them into S (no longer
    // needed), which is row-major as plain_pseudo_inverse reads them.
    S_ = eigen.eigenvectors();
    cut = plain_pseudo_inverse(eigen.eigenvalues().data(), 1, S_.data(), b_.data(), s_c,
                               tmp_.data(), n);
    beta_.noalias() = S_ * tmp_;
    return cut.dropped <= 1;
  }

  Matrix S_;
  Vector b_, beta_, alpha_, tmp_, marginals_;
  Eigen::LLT<Matrix> cholesky;
  Eigen::SelfAdjointEigenSolver<Matrix> eigen;
};

}  // namespace sinkgrad::math
