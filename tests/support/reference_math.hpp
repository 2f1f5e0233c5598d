#pragma once
// Independent references for the library tests, written from MATH.md in the most direct way
// and sharing no code with core/ or solvers/:
//   - the forward as the seeds write it: P = exp(M), then T times divide by column sums and by
//     row sums (no log domain, so only for moderate logits);
//   - the unrolled backward as an autograd tape would do it: store every n x n iterate and its
//     normalisers, then apply the textbook adjoint of each division in reverse;
//   - the implicit gradients R ⊙ (G - α 1^T - 1 β^T), with (α, β) from the 2n block systems
//     solved by a rank-revealing least-squares factorisation (Eigen's complete orthogonal
//     decomposition), not from the Schur complements that the solvers use.
// Everything is computed in long double (x86: 64-bit mantissa) so that the reference is more
// accurate than the float64 code it checks.

#include <Eigen/Dense>

#include <cmath>
#include <vector>

#include "tests/support/wide.hpp"

namespace sinkgrad::testing {

// R = Sinkhorn_T(exp(M)): columns then rows, T times.
inline Square reference_forward(const Square& M, int n, int T) {
  Square X(M.size());
  for (size_t k = 0; k < M.size(); ++k) X[k] = std::exp(M[k]);
  for (int t = 0; t < T; ++t) {
    for (int j = 0; j < n; ++j) {
      Wide s = 0;
      for (int i = 0; i < n; ++i) s += X[i * n + j];
      for (int i = 0; i < n; ++i) X[i * n + j] /= s;
    }
    for (int i = 0; i < n; ++i) {
      Wide s = 0;
      for (int j = 0; j < n; ++j) s += X[i * n + j];
      for (int j = 0; j < n; ++j) X[i * n + j] /= s;
    }
  }
  return X;
}

// dL/dM of the T-step forward above by reverse-mode over a stored tape of iterates.
inline Square reference_unrolled(const Square& M, const Square& G, int n, int T) {
  const size_t nn = M.size();
  Square P(nn);
  for (size_t k = 0; k < nn; ++k) P[k] = std::exp(M[k]);
  // tape[2t] = Y_t (after the column step), tape[2t + 1] = X_{t+1} (after the row step);
  // col_sums[t], row_sums[t]: the normalisers used.
  std::vector<Square> tape;
  std::vector<std::vector<Wide>> col_sums, row_sums;
  Square X = P;
  for (int t = 0; t < T; ++t) {
    std::vector<Wide> cs(n, 0), rs(n, 0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) cs[j] += X[i * n + j];
    Square Y(nn);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) Y[i * n + j] = X[i * n + j] / cs[j];
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) rs[i] += Y[i * n + j];
    Square Xn(nn);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) Xn[i * n + j] = Y[i * n + j] / rs[i];
    tape.push_back(Y);
    tape.push_back(Xn);
    col_sums.push_back(cs);
    row_sums.push_back(rs);
    X = Xn;
  }
  Square d = G;  // adjoint of the current output
  for (int t = T - 1; t >= 0; --t) {
    // Row step X = Y / rs: dY_ij = (dX_ij - sum_k dX_ik X_ik) / rs_i.
    const Square& Xt = tape[2 * t + 1];
    Square dY(nn);
    for (int i = 0; i < n; ++i) {
      Wide inner = 0;
      for (int k = 0; k < n; ++k) inner += d[i * n + k] * Xt[i * n + k];
      for (int j = 0; j < n; ++j) dY[i * n + j] = (d[i * n + j] - inner) / row_sums[t][i];
    }
    // Column step Y = X / cs: dX_ij = (dY_ij - sum_k dY_kj Y_kj) / cs_j.
    const Square& Yt = tape[2 * t];
    Square dX(nn);
    for (int j = 0; j < n; ++j) {
      Wide inner = 0;
      for (int k = 0; k < n; ++k) inner += dY[k * n + j] * Yt[k * n + j];
      for (int i = 0; i < n; ++i) dX[i * n + j] = (dY[i * n + j] - inner) / col_sums[t][j];
    }
    d = dX;
  }
  for (size_t k = 0; k < nn; ++k) d[k] *= P[k];  // P = exp(M): dM = P ⊙ dP
  return d;
}

enum class ReferenceSystem { plain, corrected };

// R ⊙ (G - α 1^T - 1 β^T) with (α, β) the minimum-norm least-squares solution of
//   plain:     [I R; R^T I] [α; β] = [s_r; s_c]
//   corrected: [diag(r) R; R^T diag(c)] [α; β] = [s_r; s_c]
// (the corrected block system is the stationarity condition whose Schur complement MATH.md
// writes; it is singular with null vector [1; -1], which does not change the gradient).
inline Square reference_implicit(const Square& R, const Square& G, int n, ReferenceSystem system) {
  using Matrix = Eigen::Matrix<Wide, Eigen::Dynamic, Eigen::Dynamic>;
  using Vector = Eigen::Matrix<Wide, Eigen::Dynamic, 1>;
  Matrix K = Matrix::Zero(2 * n, 2 * n);
  Vector rhs = Vector::Zero(2 * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Wide x = R[i * n + j];
      K(i, n + j) = x;
      K(n + j, i) = x;
      rhs(i) += x * G[i * n + j];      // s_r
      rhs(n + j) += x * G[i * n + j];  // s_c
      if (system == ReferenceSystem::corrected) {
        K(i, i) += x;          // r
        K(n + j, n + j) += x;  // c
      }
    }
  if (system == ReferenceSystem::plain)
    for (int k = 0; k < 2 * n; ++k) K(k, k) = 1;
  Eigen::CompleteOrthogonalDecomposition<Matrix> cod(K);
  const Vector x = cod.solve(rhs);
  Square grad(R.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) grad[i * n + j] = R[i * n + j] * (G[i * n + j] - x(i) - x(n + j));
  return grad;
}

// The projection of g onto the matrices whose columns (or rows) sum to 0 that is orthogonal in
// the inner product <x, y> = sum x_ij y_ij / R_ij: min sum (x - g)^2 / R subject to the sums
// gives x = g - R diag(lambda) (columns) or x = g - diag(lambda) R (rows), lambda the sums of g
// over those of R.
enum class ReferenceSide { rows, columns };

inline Square reference_projection(const Square& g, const Square& R, int n, ReferenceSide side) {
  using Matrix = Eigen::Matrix<Wide, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Matrix> Gm(g.data(), n, n), Rm(R.data(), n, n);
  Matrix P;
  if (side == ReferenceSide::columns) {
    const auto lambda = (Gm.colwise().sum().array() / Rm.colwise().sum().array()).matrix();
    P = Gm - Rm * lambda.asDiagonal();
  } else {
    const auto lambda = (Gm.rowwise().sum().array() / Rm.rowwise().sum().array()).matrix();
    P = Gm - lambda.asDiagonal() * Rm;
  }
  return Square(P.data(), P.data() + P.size());
}

// sqrt(sum (a - b)^2 / R) over the entries with R > 0: the norm in which reference_projection
// is orthogonal (a and b agree where R = 0 for every implicit gradient).
template <class A, class B, class W>
double weighted_difference_norm(const A& a, const B& b, const W& R, size_t count) {
  Wide sum = 0;
  for (size_t k = 0; k < count; ++k) {
    if (!(Wide(R[k]) > 0)) continue;
    const Wide d = Wide(a[k]) - Wide(b[k]);
    sum += d * d / Wide(R[k]);
  }
  return static_cast<double>(std::sqrt(sum));
}

// ||a||_F
template <class A>
double frobenius(const A& a, size_t count) {
  Wide sum = 0;
  for (size_t k = 0; k < count; ++k) sum += Wide(a[k]) * Wide(a[k]);
  return static_cast<double>(std::sqrt(sum));
}

// ||a - b||_F
template <class A, class B>
double difference_norm(const A& a, const B& b, size_t count) {
  Wide diff = 0;
  for (size_t k = 0; k < count; ++k) {
    const Wide d = Wide(a[k]) - Wide(b[k]);
    diff += d * d;
  }
  return static_cast<double>(std::sqrt(diff));
}

// ||a - b||_F / ||b||_F (or ||a - b||_F when b = 0).
template <class A, class B>
double relative_error(const A& a, const B& b, size_t count) {
  Wide diff = 0, norm = 0;
  for (size_t k = 0; k < count; ++k) {
    const Wide d = Wide(a[k]) - Wide(b[k]);
    diff += d * d;
    norm += Wide(b[k]) * Wide(b[k]);
  }
  return static_cast<double>(norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff));
}

}  // namespace sinkgrad::testing
