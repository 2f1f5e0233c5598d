#pragma once
// The pseudo-inverse step of `direct system=plain`, shared by the CPU (Eigen) and GPU (Jacobi)
// variants so that both decide the same way: coefficients coef_k = (v_k . b) / lambda_k, with
// eigenvalues |lambda| <= n eps max|lambda| dropped (coef_k = 0).
//
// Whether an eigenvalue falls on one side of that cut or the other is decided by rounding when
// it lies within a factor near_cut_band of it: two builds (or the CPU and the GPU) can then
// return very different gradients. Such an eigenvalue is harmless when its eigenvector is
// (nearly) the constant vector 1, which shifts alpha and beta without changing the gradient;
// otherwise the matrix is reported as ill_conditioned. The measure: the part of v_k orthogonal
// to 1 times |(v_k . b) / lambda_k| (the change of beta if lambda_k were kept), summed over the
// eigenvalues in the band, against sqrt(eps) times the size of beta from the eigenvalues clear
// of the cut and of the terms b is the difference of (compared as squares). Without the terms,
// a b that is rounding alone (a constant G at convergence, whose exact gradient is 0) made a
// change of rounding size look large beside a beta of rounding size: a quarter to a half of
// such matrices were reported ill_conditioned with gradients of 1e-16.

#include "core/host_device.hpp"

namespace sinkgrad::math {

inline constexpr int near_cut_band = 16;

struct PlainCut {
  int dropped = 0;        // eigenvalues at or below the cut
  bool near_cut = false;  // an eigenvalue near the cut changes the gradient
};

// n times the squared change of the gradient from eigenpair k (column k of V, n x n row-major)
// in the band near the cut: n coefficient^2 || v_k - mean(v_k) 1 ||^2 (the change of beta if
// lambda_k were kept). n || v - mean(v) 1 ||^2 = n sum d_i^2 - (sum d_i)^2 with d_i = v_i - v_0,
// which loses at most log2(n + 1) bits (|d_0 - mean(d)| = |mean(d)|), one pass with no division
// and no root: in the one-thread GPU kernel at n = 4 the measure sits on a latency-bound chain.
template <class Real>
SINKGRAD_HD Real near_cut_change_squared_n(const Real* V, int k, Real coefficient, int n) {
  const Real v0 = V[k];
  Real sum = 0, squares = 0;
  for (int i = 1; i < n; ++i) {
    const Real d = V[i * n + k] - v0;
    sum += d;
    squares += d * d;
  }
  const Real off_gauge_n = max_of(Real(0), Real(n) * squares - sum * sum);
  // |c| (|c| off_gauge_n): overflows only where the change itself passes the largest Real.
  return abs_of(coefficient) * (abs_of(coefficient) * off_gauge_n);
}

// lambda[k * lambda_stride], k < n: the eigenvalues; V (n x n, row-major): the orthonormal
// eigenvectors as columns; b: the right-hand side, s_c - u (schur_rhs), and s_c its first term.
// Writes coef (n).
template <class Real>
SINKGRAD_HD PlainCut plain_pseudo_inverse(const Real* lambda, int lambda_stride, const Real* V,
                                          const Real* b, const Real* s_c, Real* coef, int n) {
  const Real eps = Epsilon<Real>::value;
  Real largest = 0;
  for (int k = 0; k < n; ++k) largest = max_of(largest, abs_of(lambda[k * lambda_stride]));
  const Real cutoff = Real(n) * eps * largest;
  const auto in_band = [&](Real size) {
    return size > cutoff / Real(near_cut_band) && size <= cutoff * Real(near_cut_band);
  };
  PlainCut cut;
  int banded = 0, first_banded = 0;  // the plain system's null eigenvalue is usually the one
  Real first_ratio = 0;
  for (int k = 0; k < n; ++k) {
    Real projection = 0;
    for (int i = 0; i < n; ++i) projection += V[i * n + k] * b[i];
    const Real l = lambda[k * lambda_stride];
    const Real size = abs_of(l);
    const bool kept = size > cutoff;
    const Real ratio = projection / l;
    coef[k] = kept ? ratio : Real(0);
    if (!kept) ++cut.dropped;
    if (in_band(size) && banded++ == 0) {
      first_banded = k;
      first_ratio = ratio;
    }
  }
  // A NaN reaches beta and the gradient, which the caller reports as a breakdown.
  if (banded == 0) return cut;
  // The band's eigenpairs are measured after the loop, not inside it: on the GPU, where each
  // thread finds its band eigenvalue at another k, a branch inside the loop ran once per k for
  // the whole warp. So is the stable size, which
  // only a matrix with an eigenvalue in the band needs, and the terms' size (u = s_c - b).
  // Every size below is taken of b and s_c times `scale`, a power of two that brings the terms
  // to [1, 2): the measure compares squares, which over- or underflowed for G far from 1
  // (float32 2^±100), where the same matrix was ill_conditioned at G and ok at 2^100 G. The
  // scaling changes no decision that the unscaled squares made without leaving the range.
  Real largest_term = 0;
  for (int j = 0; j < n; ++j)
    largest_term = max_of(largest_term, max_of(abs_of(s_c[j]), abs_of(s_c[j] - b[j])));
  const Real scale = unit_scale(largest_term);
  Real terms_squared = 0;
  for (int j = 0; j < n; ++j) {
    const Real term = scale * s_c[j], other = scale * (s_c[j] - b[j]);
    terms_squared += term * term + other * other;
  }
  // n ambiguous^2 against n eps (stable^2 + terms^2), both sides squares of non-negative numbers.
  Real ambiguous_squared_n = 0;
  if (banded == 1) {
    ambiguous_squared_n = near_cut_change_squared_n(V, first_banded, scale * first_ratio, n);
  } else {
    Real ambiguous_n = 0;  // sqrt(n) times the sum of the changes' norms
    for (int k = 0; k < n; ++k) {
      const Real l = lambda[k * lambda_stride];
      if (!in_band(abs_of(l))) continue;
      Real projection = 0;
      for (int i = 0; i < n; ++i) projection += V[i * n + k] * b[i];
      ambiguous_n += sqrt_of(near_cut_change_squared_n(V, k, scale * (projection / l), n));
    }
    ambiguous_squared_n = ambiguous_n * ambiguous_n;
  }
  // Written so that a NaN in the measure counts as near the cut. The terms alone usually
  // decide (the band's eigenvector is 1 to rounding); the stable part, which can only add to
  // the right side, is summed where they do not, with the same outcome as summing it always.
  if (ambiguous_squared_n <= Real(n) * eps * terms_squared) return cut;
  Real stable_squared = 0;
  for (int k = 0; k < n; ++k)
    if (!in_band(abs_of(lambda[k * lambda_stride])))
      stable_squared += (scale * coef[k]) * (scale * coef[k]);
  cut.near_cut = !(ambiguous_squared_n <= Real(n) * eps * (stable_squared + terms_squared));
  return cut;
}

}  // namespace sinkgrad::math
