// Per-matrix statuses: bad input, CG stopped early, singular factorisations, and the residual
// history. One bad matrix never changes its neighbours.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
bool all_nan(const HostBatch<Real>& grad, index_t b) {
  const index_t nn = grad.n() * grad.n();
  for (index_t k = 0; k < nn; ++k)
    if (!std::isnan(grad.data()[b * nn + k])) return false;
  return true;
}

template <class Real>
bool all_finite(const HostBatch<Real>& grad, index_t b) {
  const index_t nn = grad.n() * grad.n();
  for (index_t k = 0; k < nn; ++k)
    if (!std::isfinite(grad.data()[b * nn + k])) return false;
  return true;
}

template <class Real>
class Statuses : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Statuses, Precisions);

// NaN/Inf in logits or grad_output, a negative entry of R, a zero row or column of R: that
// matrix alone gets invalid_input and a NaN gradient; every other matrix is bitwise what it is
// when solved alone.
TYPED_TEST(Statuses, InvalidInputIsConfinedToItsMatrix) {
  using Real = TypeParam;
  auto rng = make_rng(700);
  const int n = 4, T = 5;
  const index_t B = 10;
  const Real nan = std::numeric_limits<Real>::quiet_NaN();
  const Real inf = std::numeric_limits<Real>::infinity();
  auto M = uniform_batch<Real>(rng, B, n, 0.0, 3.0);
  auto G = normal_batch<Real>(rng, B, n);
  M(1, 2, 2) = nan;  // logits: R becomes NaN too
  M(3, 0, 3) = -inf;
  auto R = forward(M, T);
  G(5, 1, 0) = nan;
  G(6, 3, 3) = inf;
  // R-only defects (the implicit solvers read R; unrolled replays from M instead).
  R(2, 0, 1) = -R(2, 0, 1);
  for (int k = 0; k < n; ++k) R(4, 1, k) = 0;  // zero row
  for (int k = 0; k < n; ++k) R(8, k, 2) = 0;  // zero column
  const std::vector<index_t> bad_everywhere = {1, 3, 5, 6};
  const std::vector<index_t> bad_R = {2, 4, 8};
  const std::vector<index_t> good = {0, 7, 9};

  for (const auto& config : all_solver_configs()) {
    SCOPED_TRACE(config.label());
    const auto solver = config.create();
    const auto sol = solve(*solver, M, R, G, T);
    std::vector<index_t> bad = bad_everywhere;
    if (config.name != "unrolled") bad.insert(bad.end(), bad_R.begin(), bad_R.end());
    for (index_t b : bad) {
      EXPECT_EQ(sol.status[b], SolveStatus::invalid_input) << "matrix " << b;
      EXPECT_TRUE(all_nan(sol.grad, b)) << "matrix " << b;
    }
    for (index_t b : good) {
      const auto alone = solve(*solver, single(M, b), single(R, b), single(G, b), T);
      // (Plain CG in float32 may end not_converged here, T = 5 being near convergence.)
      EXPECT_NE(sol.status[b], SolveStatus::invalid_input) << "matrix " << b;
      EXPECT_EQ(sol.status[b], alone.status[0]);
      EXPECT_EQ(sol.iterations[b], alone.iterations[0]);
      EXPECT_EQ(0,
                std::memcmp(alone.grad.data(), sol.grad.data() + b * n * n, sizeof(Real) * n * n))
          << "matrix " << b << " differs from the same matrix solved alone";
    }
  }
}

// One CG iteration on n = 8 cannot meet the tolerance: not_converged, iterations == 1, and the
// first iterate's gradient is written (finite).
TYPED_TEST(Statuses, CgStoppedEarlyIsNotConverged) {
  using Real = TypeParam;
  auto rng = make_rng(701);
  const int n = 8, T = 3;
  const auto M = uniform_batch<Real>(rng, 16, n, 0.0, 4.0);
  const auto G = normal_batch<Real>(rng, 16, n);
  const auto R = forward(M, T);
  for (const char* system : {"schur", "block"})
    for (const SolverConfig& config :
         {SolverConfig{"cg_plain", {{"system", system}, {"max_iterations", "1"}}},
          SolverConfig{"cg_corrected", {{"max_iterations", "1"}}}}) {
      SCOPED_TRACE(config.label());
      const auto sol = solve(*config.create(), M, R, G, T);
      for (index_t b = 0; b < M.batch(); ++b) {
        EXPECT_EQ(sol.status[b], SolveStatus::not_converged) << "matrix " << b;
        EXPECT_EQ(sol.iterations[b], 1) << "matrix " << b;
        EXPECT_TRUE(all_finite(sol.grad, b)) << "matrix " << b;
      }
    }
}

// The written gradient after one CG step is the textbook first iterate
// β_1 = (b^T b / b^T S b) b of the corrected system, built here from the formulas.
TEST(StatusesFloat64, OneCorrectedCgStepIsTheFirstIterate) {
  auto rng = make_rng(702);
  const int n = 8, T = 2;
  const auto M = uniform_batch<double>(rng, 6, n, 0.0, 4.0);
  const auto G = normal_batch<double>(rng, 6, n);
  const auto R = forward(M, T);
  const auto sol =
      solve(*SolverConfig{"cg_corrected", {{"max_iterations", "1"}, {"project", "false"}}}.create(),
            M, R, G, T);
  for (index_t m = 0; m < M.batch(); ++m) {
    std::vector<Wide> r(n, 0), c(n, 0), s_r(n, 0), s_c(n, 0), b(n, 0), Sb(n, 0), beta(n), alpha(n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const Wide x = R(m, i, j), g = G(m, i, j);
        r[i] += x;
        c[j] += x;
        s_r[i] += x * g;
        s_c[j] += x * g;
      }
    for (int j = 0; j < n; ++j) {
      b[j] = s_c[j];
      for (int i = 0; i < n; ++i) b[j] -= R(m, i, j) * s_r[i] / r[i];
    }
    // S b = diag(c) b - R^T diag(r)^-1 R b
    for (int j = 0; j < n; ++j) {
      Sb[j] = c[j] * b[j];
      for (int i = 0; i < n; ++i) {
        Wide Rb_i = 0;
        for (int k = 0; k < n; ++k) Rb_i += R(m, i, k) * b[k];
        Sb[j] -= R(m, i, j) * Rb_i / r[i];
      }
    }
    Wide bb = 0, bSb = 0;
    for (int j = 0; j < n; ++j) {
      bb += b[j] * b[j];
      bSb += b[j] * Sb[j];
    }
    for (int j = 0; j < n; ++j) beta[j] = bb / bSb * b[j];
    for (int i = 0; i < n; ++i) {
      Wide Rbeta = 0;
      for (int j = 0; j < n; ++j) Rbeta += R(m, i, j) * beta[j];
      alpha[i] = (s_r[i] - Rbeta) / r[i];
    }
    std::vector<Wide> expected(n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        expected[i * n + j] = R(m, i, j) * (G(m, i, j) - alpha[i] - beta[j]);
    EXPECT_LT(relative_error(sol.grad.data() + m * n * n, expected, n * n), 1e-12)
        << "matrix " << m;
  }
}

// R with a block structure (two independent doubly stochastic blocks, or a permutation) makes
// the corrected S rank-deficient by more than its known null vector 1: the direct solver must
// say breakdown and write NaN, not a plausible gradient. CG on the same (consistent) system
// is fine and matches the least-squares reference.
TYPED_TEST(Statuses, DirectBreaksDownOnBlockStructuredR) {
  using Real = TypeParam;
  auto rng = make_rng(703);
  const int n = 8;
  HostBatch<Real> R(4, n, Real(0));
  // 0: blocks of sizes 3 and 5, each a converged Sinkhorn matrix.
  const auto block3 = forward(uniform_batch<Real>(rng, 1, 3, 0.0, 1.0), 300);
  const auto block5 = forward(uniform_batch<Real>(rng, 1, 5, 0.0, 1.0), 300);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) R(0, i, j) = block3(0, i, j);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) R(0, 3 + i, 3 + j) = block5(0, i, j);
  // 1: a permutation matrix.
  std::vector<int> perm = {3, 0, 7, 5, 1, 6, 2, 4};
  for (int i = 0; i < n; ++i) R(1, i, perm[i]) = 1;
  // 2, 3: healthy neighbours.
  const auto healthy = forward(uniform_batch<Real>(rng, 2, n, 0.0, 3.0), 4);
  std::memcpy(R.data() + 2 * n * n, healthy.data(), sizeof(Real) * 2 * n * n);
  const auto G = normal_batch<Real>(rng, 4, n);
  const HostBatch<Real> no_logits;

  for (const char* system : {"corrected", "plain"}) {
    SCOPED_TRACE(system);
    const auto solver = SolverConfig{"direct", {{"system", system}}}.create();
    const auto sol = solve(*solver, no_logits, R, G, 4);
    for (index_t b : {0, 1}) {
      EXPECT_EQ(sol.status[b], SolveStatus::breakdown) << "matrix " << b;
      EXPECT_TRUE(all_nan(sol.grad, b)) << "matrix " << b;
    }
    for (index_t b : {2, 3}) {
      // At T = 4 the plain system's near-null eigenvalue may lie within rounding of the cut
      // (float32): then ill_conditioned, with its gradient written (solvers/direct/plain_cut.hpp).
      const bool plain = std::string(system) == "plain";
      EXPECT_TRUE(sol.status[b] == SolveStatus::ok ||
                  (plain && sol.status[b] == SolveStatus::ill_conditioned))
          << "matrix " << b << ": status " << int(sol.status[b]);
      EXPECT_TRUE(all_finite(sol.grad, b)) << "matrix " << b;
    }
  }

  const auto cg = solve(*SolverConfig{"cg_corrected", {}}.create(), no_logits, R, G, 4);
  for (index_t b = 0; b < 4; ++b) {
    EXPECT_EQ(cg.status[b], SolveStatus::ok) << "matrix " << b;
    const Square ref =
        reference_implicit(widen(R.data() + b * n * n, n), widen(G.data() + b * n * n, n), n,
                           ReferenceSystem::corrected);
    // Relative to ||R ⊙ G||: for the permutation the exact gradient is 0 (every entry of R
    // with weight is pinned by α_i + β_π(i) = G_iπ(i)).
    Wide scale = 0;
    for (int k = 0; k < n * n; ++k) {
      const Wide rg = Wide(R.data()[b * n * n + k]) * G.data()[b * n * n + k];
      scale += rg * rg;
    }
    EXPECT_LT(difference_norm(cg.grad.data() + b * n * n, ref, n * n),
              (sizeof(Real) == 4 ? 1e-5 : 1e-12) * static_cast<double>(std::sqrt(scale)))
        << "matrix " << b;
  }
}

// ||b|| of each CG system, from the formulas (long double).
Wide rhs_norm(const std::string& system, const HostBatch<double>& R, const HostBatch<double>& G,
              index_t m) {
  const int n = R.n();
  std::vector<Wide> r(n, 0), s_r(n, 0), s_c(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      r[i] += R(m, i, j);
      s_r[i] += R(m, i, j) * G(m, i, j);
      s_c[j] += R(m, i, j) * G(m, i, j);
    }
  Wide sum = 0;
  if (system == "block") {
    for (int k = 0; k < n; ++k) sum += s_r[k] * s_r[k] + s_c[k] * s_c[k];
    return std::sqrt(sum);
  }
  for (int j = 0; j < n; ++j) {
    Wide b = s_c[j];
    for (int i = 0; i < n; ++i) b -= R(m, i, j) * s_r[i] / (system == "corrected" ? r[i] : 1);
    sum += b * b;
  }
  return std::sqrt(sum);
}

// The residual history: one row per matrix, ||b|| first, a finite entry per iteration
// performed, NaN after, and (when converged) a last entry below tolerance * ||b||.
TEST(StatusesFloat64, ResidualHistoryIsRecorded) {
  auto rng = make_rng(704);
  const int n = 6;
  const index_t B = 10;
  for (int T : {2, 400}) {
    const auto M = uniform_batch<double>(rng, B, n, 0.0, 3.0);
    const auto G = normal_batch<double>(rng, B, n);
    const auto R = forward(M, T);
    for (const auto& [config, system] :
         {std::pair{SolverConfig{"cg_corrected", {}}, std::string("corrected")},
          std::pair{SolverConfig{"cg_plain", {{"system", "schur"}}}, std::string("schur")},
          std::pair{SolverConfig{"cg_plain", {{"system", "block"}}}, std::string("block")},
          std::pair{SolverConfig{"cg_corrected", {{"max_iterations", "3"}, {"tolerance", "0"}}},
                    std::string("corrected")}}) {
      SCOPED_TRACE(config.label() + ", T = " + std::to_string(T));
      const auto solver = config.create();
      const auto sol = solve(*solver, M, R, G, T, /*record_history=*/true);
      const int stride = sol.history_stride;
      if (config.options.count("max_iterations")) {
        EXPECT_EQ(stride, 4);
      }
      for (index_t b = 0; b < B; ++b) {
        SCOPED_TRACE("matrix " + std::to_string(b));
        const double* h = sol.history.data() + b * stride;
        const int its = sol.iterations[b];
        ASSERT_GE(its, 1);
        ASSERT_LT(its, stride);
        EXPECT_NEAR(h[0], static_cast<double>(rhs_norm(system, R, G, b)), 1e-13 * h[0]);
        for (int k = 0; k <= its; ++k) EXPECT_TRUE(std::isfinite(h[k]) && h[k] >= 0) << k;
        for (int k = its + 1; k < stride; ++k) EXPECT_TRUE(std::isnan(h[k])) << k;
        if (sol.status[b] == SolveStatus::ok) {
          EXPECT_LE(h[its], 1e-12 * h[0]);  // auto tolerance in float64
          EXPECT_LT(h[its], h[its - 1]);
        } else {
          EXPECT_EQ(sol.status[b], SolveStatus::not_converged);
          EXPECT_EQ(its, stride - 1);
          // Only the plain systems (indefinite before the forward converges, ill-posed near
          // it) or tolerance 0 stop this way; the corrected system is semi-definite.
          EXPECT_TRUE(config.options.count("max_iterations") || system != "corrected");
        }
      }
    }
  }
  // Solvers that do not iterate record nothing.
  const SolverConfig direct{"direct", {}}, unrolled{"unrolled", {}};
  EXPECT_EQ(direct.create()->history_length(n, Precision::float64), 0);
  EXPECT_EQ(unrolled.create()->history_length(n, Precision::float64), 0);
}

}  // namespace
}  // namespace sinkgrad::testing
