#pragma once
// Small dense symmetric factorisations for one n x n matrix (n <= 64), host and device: the
// GPU variant of `direct` uses them where the CPU variant uses Eigen (direct_solver.cpp); its
// team form of the corrected solve (direct_team.hpp) does the same operations in the same order.
// Matrices are row-major, n x n, in caller-owned workspace; nothing allocates.
//
// Same function as the Eigen path, by construction:
//   - cholesky_factor: the unblocked left-looking LLT that Eigen's LLT<Lower> runs for n < 32
//     (blocked, in panels of 8 to 16 columns, for larger n: same arithmetic, other order of the
//     sums); a pivot that is not > 0 (or NaN) is a failure, as Eigen's NumericalIssue.
//   - cholesky_rcond: Eigen's LLT::rcond(), i.e. 1 / (||A||_1 * est ||A^-1||_1) with Higham's
//     estimator (Eigen's rcond_invmatrix_L1_norm_estimate, LAPACK xLACON), step for step;
//     cholesky_conditioned takes its test against 10 n eps, mostly from a cheaper bound.
//   - jacobi_eigen: cyclic Jacobi rotations instead of Eigen's tridiagonalisation + implicit QR.
//     Both are backward stable: eigenvalues agree to a few eps * max|lambda|, eigenvectors of
//     well-separated eigenvalues to rounding. The pseudo-inverse built on it uses the same
//     cutoff (n eps max|lambda|) and the same rank rule as the CPU, so a difference between the
//     two variants can only arise for an eigenvalue within rounding of the cutoff (it changes
//     the component of beta along a null vector, which the gradient does not see when that
//     vector is 1).
// Cost: Cholesky n^3/3, one solve n^2 for the condition bound (and, where it cannot decide, at
// most 11 for the estimate); Jacobi about 6 sweeps of 4 n^3 (with eigenvectors) until the
// off-diagonal part is below eps ||A||_F.

#include "kernels/numeric.hpp"

namespace sinkgrad::math {

// In place: the lower triangle of A becomes L with A = L L^T (the upper triangle is not read
// and not written). Returns false when a pivot is not positive (A not positive definite).
template <class Real>
SINKGRAD_HD bool cholesky_factor(Real* A, int n) {
  for (int k = 0; k < n; ++k) {
    Real pivot = A[k * n + k];
    for (int j = 0; j < k; ++j) pivot -= A[k * n + j] * A[k * n + j];
    if (!(pivot > Real(0))) return false;
    pivot = sqrt_of(pivot);
    A[k * n + k] = pivot;
    for (int i = k + 1; i < n; ++i) {
      Real sum = A[i * n + k];
      for (int j = 0; j < k; ++j) sum -= A[i * n + j] * A[k * n + j];
      A[i * n + k] = sum / pivot;
    }
  }
  return true;
}

// x = (L L^T)^-1 x in place. Each sum subtracts its terms in the order in which the x_j become
// final (ascending, then descending), so that the team form (direct_team.hpp), where x_j is
// subtracted from every later component as soon as it is known, does the same operations.
// With comparison = true the same sweeps solve with L's comparison matrix instead (|L_ii| on the
// diagonal, -|L_ij| off it; L_ii > 0 here): every term is added.
template <bool comparison = false, class Real>
SINKGRAD_HD void cholesky_solve(const Real* L, Real* x, int n) {
  const auto update = [](Real& sum, Real entry, Real x_j) {
    if constexpr (comparison)
      sum += abs_of(entry) * x_j;
    else
      sum -= entry * x_j;
  };
  for (int i = 0; i < n; ++i) {
    Real sum = x[i];
    for (int j = 0; j < i; ++j) update(sum, L[i * n + j], x[j]);
    x[i] = sum / L[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    Real sum = x[i];
    for (int j = n - 1; j > i; --j) update(sum, L[j * n + i], x[j]);
    x[i] = sum / L[i * n + i];
  }
}

// ||A||_1 of a symmetric matrix given by its lower triangle (Eigen's LLT::m_l1_norm).
template <class Real>
SINKGRAD_HD Real symmetric_norm_1(const Real* A, int n) {
  Real norm = 0;
  for (int col = 0; col < n; ++col) {
    Real sum = 0;
    for (int i = col; i < n; ++i) sum += abs_of(A[i * n + col]);
    for (int j = 0; j < col; ++j) sum += abs_of(A[col * n + j]);
    if (sum > norm) norm = sum;
  }
  return norm;
}

template <class Real>
SINKGRAD_HD Real norm_1(const Real* v, int n) {
  Real sum = 0;
  for (int k = 0; k < n; ++k) sum += abs_of(v[k]);
  return sum;
}

// Reciprocal condition estimate of A = L L^T given ||A||_1: Eigen's rcond_estimate_helper with
// rcond_invmatrix_L1_norm_estimate (Higham, Algorithms 4.1 and 5.1). work: 3n Reals.
template <class Real>
SINKGRAD_HD Real cholesky_rcond(const Real* L, Real matrix_norm, int n, Real* work) {
  if (n == 0) return Real(1) / Real(0);
  if (matrix_norm == Real(0)) return Real(0);
  if (n == 1) return Real(1);
  Real* v = work;
  Real* sign = work + n;
  Real* old_sign = work + 2 * n;
  for (int i = 0; i < n; ++i) v[i] = Real(1) / Real(n);
  cholesky_solve(L, v, n);
  Real lower_bound = norm_1(v, n);
  Real old_lower_bound = lower_bound;
  int old_index = -1;
  for (int k = 0; k < 4; ++k) {
    bool same_sign = true;
    for (int i = 0; i < n; ++i) {
      sign[i] = v[i] < Real(0) ? Real(-1) : Real(1);
      if (k == 0 || sign[i] != old_sign[i]) same_sign = false;
    }
    if (k > 0 && same_sign) break;
    for (int i = 0; i < n; ++i) v[i] = sign[i];
    cholesky_solve(L, v, n);  // A is symmetric: the adjoint solve is the same solve
    int index = 0;            // first index of the largest |v_i|, as Eigen's maxCoeff
    for (int i = 1; i < n; ++i)
      if (abs_of(v[i]) > abs_of(v[index])) index = i;
    if (index == old_index) break;
    fill(v, n, Real(0));
    v[index] = Real(1);
    cholesky_solve(L, v, n);
    lower_bound = norm_1(v, n);
    if (lower_bound <= old_lower_bound) break;
    for (int i = 0; i < n; ++i) old_sign[i] = sign[i];
    old_index = index;
    old_lower_bound = lower_bound;
  }
  Real alternating = 1;
  for (int i = 0; i < n; ++i) {
    v[i] = alternating * (Real(1) + Real(i) / Real(n - 1));
    alternating = -alternating;
  }
  cholesky_solve(L, v, n);
  const Real alternate_lower_bound = (Real(2) * norm_1(v, n)) / (Real(3) * Real(n));
  const Real inverse_norm = max_of(lower_bound, alternate_lower_bound);
  return inverse_norm == Real(0) ? Real(0) : (Real(1) / inverse_norm) / matrix_norm;
}

// cholesky_inverse_bound's last step, shared with the team forms: max_i x_i of the comparison
// solve's solution x, not finite where an entry is not. cap: the loop's compile-time bound for a
// team's replicated line (unrolled_cap), 0: n, rolled.
template <class Real, int cap = 0, class Line>
SINKGRAD_HD Real inverse_bound_of(const Line& x, int n) {
  Real bound = 0, total = 0;  // total carries a NaN that the largest entry may skip
  SINKGRAD_UNROLL
  for (int i = 0; i < (cap > 0 ? cap : n); ++i) {
    if (i >= n) break;
    raise_to(bound, x[i]);
    total += x[i];
  }
  return is_finite(total) ? bound : total;
}

// An upper bound of ||A^-1||_1 for A = L L^T: with C = L's comparison matrix, |L^-1| <= C^-1
// entrywise (Higham, Accuracy and Stability of Numerical Algorithms, Thm 8.12), so |A^-1| <=
// C^-T C^-1 and ||A^-1||_1 <= max_i (C^-T C^-1 1)_i: one solve, every term nonnegative, so
// rounded to a few n eps relative. Within a small factor of ||A^-1||_1 on the Schur matrices of
// general logits, far above it near a permutation. work: n.
template <class Real>
SINKGRAD_HD Real cholesky_inverse_bound(const Real* L, int n, Real* work) {
  for (int i = 0; i < n; ++i) work[i] = Real(1);
  cholesky_solve<true>(L, work, n);
  return inverse_bound_of<Real>(work, n);
}

// Whether the bound decides the condition test: it is within half the threshold, where the
// estimate, a lower bound of ||A^-1||_1 whose solves err by O(n eps sqrt(cond)) relative there,
// passes too.
template <class Real>
SINKGRAD_HD bool bound_passes(Real inverse_bound, Real matrix_norm, Real threshold) {
  return matrix_norm > Real(0) && inverse_bound * matrix_norm <= Real(1) / (Real(2) * threshold);
}

// `direct`'s condition test, rcond >= 10 n eps with rcond the estimate of cholesky_rcond: taken
// from the bound where it can (one solve against the estimate's four to eleven), and only
// elsewhere (near-permutations, near-singular or non-finite factors, a zero norm) from
// rcond_estimate(), called then. The same decision either way. Every form of `direct` (this
// file's, the team's, the CPU lanes') decides through it.
template <class Real, class Estimate>
SINKGRAD_HD bool conditioned(Real inverse_bound, Real matrix_norm, int n,
                             const Estimate& rcond_estimate) {
  const Real threshold = Real(10 * n) * Epsilon<Real>::value;
  return bound_passes(inverse_bound, matrix_norm, threshold) || rcond_estimate() >= threshold;
}

// conditioned() for a factor in a workspace. work: 3n Reals.
template <class Real>
SINKGRAD_HD bool cholesky_conditioned(const Real* L, Real matrix_norm, int n, Real* work) {
  return conditioned(cholesky_inverse_bound(L, n, work), matrix_norm, n,
                     [&] { return cholesky_rcond(L, matrix_norm, n, work); });
}

// Symmetric eigendecomposition A = V diag(lambda) V^T by cyclic Jacobi rotations. A (n x n,
// symmetric, both triangles) is destroyed: its diagonal ends as lambda (unsorted), the rest as
// scaled rounding residue. V receives
// the eigenvectors as columns. Returns false when the input is not finite.
template <class Real>
SINKGRAD_HD bool jacobi_eigen(Real* A, Real* V, int n) {
  const Real eps = Epsilon<Real>::value;
  // Scaled by max|A_ij| as Eigen's SelfAdjointEigenSolver does, so that a matrix of tiny
  // (subnormal) entries keeps its relative precision; the eigenvalues are scaled back at the end.
  Real scale = 0;
  for (int k = 0; k < n * n; ++k) scale = max_of(scale, abs_of(A[k]));
  if (!is_finite(scale)) return false;
  if (scale == Real(0)) scale = Real(1);
  for (int k = 0; k < n * n; ++k) A[k] /= scale;
  Real frobenius = 0;
  for (int k = 0; k < n * n; ++k) frobenius += A[k] * A[k];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) V[i * n + j] = i == j ? Real(1) : Real(0);
  const Real target = eps * eps * frobenius;
  for (int sweep = 0; sweep < 50; ++sweep) {
    Real off = 0;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) off += A[p * n + q] * A[p * n + q];
    if (!(off > target)) break;
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        const Real apq = A[p * n + q];
        if (apq == Real(0)) continue;
        // Rotation that zeroes A_pq (Golub & Van Loan, Algorithm 8.5.1), t = tan(angle).
        const Real theta = (A[q * n + q] - A[p * n + p]) / (Real(2) * apq);
        const Real abs_theta = abs_of(theta);
        const Real root = abs_theta > Real(1)
                              ? abs_theta * sqrt_of(Real(1) + (Real(1) / theta) / theta)
                              : sqrt_of(Real(1) + theta * theta);
        const Real t = (theta >= Real(0) ? Real(1) : Real(-1)) / (abs_theta + root);
        const Real c = Real(1) / sqrt_of(Real(1) + t * t);
        const Real s = t * c;
        // A <- J^T A J on its rows and columns p, q: the 2 x 2 block in closed form (a_pp - t
        // a_pq, a_qq + t a_pq, a_pq = 0), the other entries of the two rows once, mirrored into
        // the columns (A is symmetric). At n = 4: 10 products and 18 accesses to A (shared
        // memory in the GPU kernel) per rotation, against 32 and 32 for J on both sides in full.
        A[p * n + p] -= t * apq;
        A[q * n + q] += t * apq;
        A[p * n + q] = A[q * n + p] = Real(0);
        for (int k = 0; k < n; ++k) {
          if (k == p || k == q) continue;
          const Real akp = A[k * n + p], akq = A[k * n + q];
          A[k * n + p] = A[p * n + k] = c * akp - s * akq;
          A[k * n + q] = A[q * n + k] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // columns p, q of V
          const Real vkp = V[k * n + p], vkq = V[k * n + q];
          V[k * n + p] = c * vkp - s * vkq;
          V[k * n + q] = s * vkp + c * vkq;
        }
      }
  }
  for (int k = 0; k < n; ++k) A[k * n + k] *= scale;
  return true;
}

}  // namespace sinkgrad::math
