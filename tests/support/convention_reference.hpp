#pragma once
// Independent references of the forward conventions (docs/math.md, "Forward conventions"),
// written from their formulas in the most direct way and sharing no code with forward/ or
// solvers/: the base matrix (exp(M), or softmax_rows(M) + eps), then each division X / (X.sum(axis)
// + eps) on the explicit matrix, and for the gradient an autograd-style tape of every iterate and
// its denominators with the textbook adjoint of each division. long double throughout.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/wide.hpp"

namespace sinkgrad::testing {

// The normalisations of one forward in order: 'c' columns, 'r' rows.
inline std::string convention_steps(const std::string& convention, int T) {
  std::string steps;
  if (convention == "tilekernels") {
    steps.push_back('c');  // (= "c" tripped GCC 12's -Wrestrict here)
    for (int t = 1; t < T; ++t) steps += "rc";
  } else {
    for (int t = 0; t < T; ++t) steps += convention == "rows_first" ? "rc" : "cr";
  }
  return steps;
}

inline Square convention_base(const Square& M, int n, const std::string& convention, Wide eps) {
  Square X(M.size());
  if (convention != "tilekernels") {
    for (size_t k = 0; k < M.size(); ++k) X[k] = std::exp(M[k]);
    return X;
  }
  for (int i = 0; i < n; ++i) {
    Wide top = M[i * n];
    for (int j = 1; j < n; ++j) top = std::max(top, M[i * n + j]);
    Wide s = 0;
    for (int j = 0; j < n; ++j) s += std::exp(M[i * n + j] - top);
    for (int j = 0; j < n; ++j) X[i * n + j] = std::exp(M[i * n + j] - top) / s + eps;
  }
  return X;
}

// X / (X.sum(axis) + eps) in place; returns the denominators.
inline std::vector<Wide> divide_by_sums(Square& X, int n, char axis, Wide eps) {
  std::vector<Wide> d(n);
  for (int a = 0; a < n; ++a) {
    Wide s = 0;
    for (int k = 0; k < n; ++k) s += axis == 'c' ? X[k * n + a] : X[a * n + k];
    d[a] = s + eps;
    for (int k = 0; k < n; ++k) (axis == 'c' ? X[k * n + a] : X[a * n + k]) /= d[a];
  }
  return d;
}

inline Square convention_forward_reference(const Square& M, int n, int T,
                                           const std::string& convention, Wide eps) {
  Square X = convention_base(M, n, convention, eps);
  for (char axis : convention_steps(convention, T)) divide_by_sums(X, n, axis, eps);
  return X;
}

// dL/dM of the forward above for L = sum(G ⊙ R).
inline Square convention_unrolled_reference(const Square& M, const Square& G, int n, int T,
                                            const std::string& convention, Wide eps) {
  const std::string steps = convention_steps(convention, T);
  std::vector<Square> inputs;  // the matrix each division divided
  std::vector<std::vector<Wide>> denominators;
  Square X = convention_base(M, n, convention, eps);
  const Square base = X;
  for (char axis : steps) {
    inputs.push_back(X);
    denominators.push_back(divide_by_sums(X, n, axis, eps));
  }
  Square bar = G;  // dL/dX
  for (int s = static_cast<int>(steps.size()) - 1; s >= 0; --s) {
    const Square& Y = inputs[s];
    const std::vector<Wide>& d = denominators[s];
    Square prev(Y.size());
    // X_ij = Y_ij / d_a: dX_ij/dY_ij = 1/d_a and every X_kl of the same line depends on Y_ij
    // through d_a with dX_kl/dd_a = -Y_kl / d_a^2.
    for (int a = 0; a < n; ++a) {
      Wide dot = 0;
      for (int k = 0; k < n; ++k) {
        const int e = steps[s] == 'c' ? k * n + a : a * n + k;
        dot += bar[e] * Y[e];
      }
      for (int k = 0; k < n; ++k) {
        const int e = steps[s] == 'c' ? k * n + a : a * n + k;
        prev[e] = bar[e] / d[a] - dot / (d[a] * d[a]);
      }
    }
    bar = prev;
  }
  Square grad(M.size());
  if (convention != "tilekernels") {
    for (size_t k = 0; k < M.size(); ++k) grad[k] = bar[k] * base[k];  // d exp(M) / dM
    return grad;
  }
  for (int i = 0; i < n; ++i) {  // softmax: dM_ij = S_ij (Sbar_ij - sum_k Sbar_ik S_ik)
    Wide dot = 0;
    for (int j = 0; j < n; ++j) dot += bar[i * n + j] * (base[i * n + j] - eps);
    for (int j = 0; j < n; ++j) grad[i * n + j] = (base[i * n + j] - eps) * (bar[i * n + j] - dot);
  }
  return grad;
}

}  // namespace sinkgrad::testing
