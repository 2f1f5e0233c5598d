#pragma once
// Dense Schur-complement matrices for the direct solver, host and device.

#include "solvers/common/implicit_math.hpp"

namespace sinkgrad::math {

// S (n x n, row-major, symmetric):
//   plain:     I - R^T R
//   corrected: diag(c) - R^T diag(r)^-1 R
template <class Real>
SINKGRAD_HD void schur_matrix(SchurSystem system, const Real* R, Marginals<Real> m, int n,
                              Real* S) {
  for (int a = 0; a < n; ++a)
    for (int b = a; b < n; ++b) {
      Real sum = 0;
      for (int i = 0; i < n; ++i) {
        const Real weight = system == SchurSystem::plain ? Real(1) : Real(1) / m.r[i];
        sum += R[i * n + a] * R[i * n + b] * weight;
      }
      const Real diagonal = system == SchurSystem::plain ? Real(1) : m.c[a];
      S[a * n + b] = (a == b ? diagonal : Real(0)) - sum;
      S[b * n + a] = S[a * n + b];
    }
}

}  // namespace sinkgrad::math
