#pragma once
// Matrix-free operators of the implicit systems; each applies its matrix in O(n^2) without
// forming it. tmp is n Reals of scratch owned by the caller.

#include "solvers/common/implicit_math.hpp"

namespace sinkgrad::math {

// S = I - R^T R (plain Schur complement, assumes r = c = 1).
template <class Real>
struct PlainSchurOperator {
  const Real* R;
  int n;
  Real* tmp;
  SINKGRAD_HD void apply(const Real* x, Real* y) const {
    multiply(R, x, tmp, n);
    multiply_transposed(R, tmp, y, n);
    for (int k = 0; k < n; ++k) y[k] = x[k] - y[k];
  }
};

// S = diag(c) - R^T diag(r)^-1 R (corrected Schur complement, actual marginals).
template <class Real>
struct CorrectedSchurOperator {
  const Real* R;
  const Real* r;
  const Real* c;
  int n;
  Real* tmp;
  SINKGRAD_HD void apply(const Real* x, Real* y) const {
    multiply(R, x, tmp, n);
    for (int i = 0; i < n; ++i) tmp[i] /= r[i];
    multiply_transposed(R, tmp, y, n);
    for (int k = 0; k < n; ++k) y[k] = c[k] * x[k] - y[k];
  }
};

// A = [I R; R^T I] acting on [α; β] (the 2n block system of seed 000).
template <class Real>
struct PlainBlockOperator {
  const Real* R;
  int n;
  SINKGRAD_HD void apply(const Real* x, Real* y) const {
    multiply(R, x + n, y, n);
    multiply_transposed(R, x, y + n, n);
    for (int k = 0; k < 2 * n; ++k) y[k] += x[k];
  }
};

}  // namespace sinkgrad::math
