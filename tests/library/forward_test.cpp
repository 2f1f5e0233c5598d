// The batched Sinkhorn forward: invariants of the map, stability for large logits, agreement
// with the straightforward exp-then-divide forward of MATH.md, and its per-matrix flags.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
struct ForwardRun {
  HostBatch<Real> R;
  std::vector<Real> violation;
  index_t invalid = 0;
};

template <class Real>
ForwardRun<Real> run_forward(const HostBatch<Real>& logits, int T) {
  ForwardRun<Real> out{HostBatch<Real>(logits.batch(), logits.n()),
                       std::vector<Real>(static_cast<size_t>(logits.batch())), 0};
  out.invalid = sinkhorn_forward<Real>(logits.view(), T, out.R.view(), out.violation.data());
  return out;
}

template <class Real>
void expect_row_stochastic(const HostBatch<Real>& R, double tolerance) {
  const int n = R.n();
  for (index_t b = 0; b < R.batch(); ++b)
    for (int i = 0; i < n; ++i) {
      Wide sum = 0;
      for (int j = 0; j < n; ++j) {
        ASSERT_TRUE(std::isfinite(R(b, i, j))) << "matrix " << b;
        ASSERT_GE(R(b, i, j), Real(0)) << "matrix " << b;
        ASSERT_LE(R(b, i, j), Real(1) + Real(tolerance)) << "matrix " << b;
        sum += R(b, i, j);
      }
      ASSERT_NEAR(static_cast<double>(sum), 1.0, tolerance) << "matrix " << b << " row " << i;
    }
}

template <class Real>
class ForwardTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ForwardTest, Precisions);

TYPED_TEST(ForwardTest, RowsSumToOne) {
  using Real = TypeParam;
  auto rng = make_rng(101);
  const double eps = std::numeric_limits<Real>::epsilon();
  for (int n : {1, 2, 3, 8, 16, 33})
    for (int T : {1, 3, 20}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      const auto logits = normal_batch<Real>(rng, 16, n, 2.0);
      expect_row_stochastic(run_forward(logits, T).R, 4 * n * eps);
    }
}

// The first step normalises columns, so R is invariant to a constant added to a column of M
// for every T. A constant added to a row is only absorbed at the fixed point (the column step
// mixes rows), so row shifts leave R unchanged only once the forward has converged.
template <class Real>
void add_random_shifts(std::mt19937_64& rng, HostBatch<Real>& logits, bool rows) {
  std::uniform_real_distribution<double> shift(-5.0, 5.0);
  std::uniform_int_distribution<int> pick(0, logits.n() - 1);
  for (index_t b = 0; b < logits.batch(); ++b) {
    const int line = pick(rng);
    const Real c = static_cast<Real>(shift(rng));
    for (int k = 0; k < logits.n(); ++k) (rows ? logits(b, line, k) : logits(b, k, line)) += c;
  }
}

TYPED_TEST(ForwardTest, InvariantToColumnShifts) {
  using Real = TypeParam;
  auto rng = make_rng(102);
  const double eps = std::numeric_limits<Real>::epsilon();
  for (int n : {2, 5, 8})
    for (int T : {1, 4, 30}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      const auto logits = uniform_batch<Real>(rng, 8, n, -3.0, 3.0);
      HostBatch<Real> shifted = logits;
      add_random_shifts(rng, shifted, /*rows=*/false);
      const auto R = run_forward(logits, T).R;
      const auto R_shifted = run_forward(shifted, T).R;
      // Shifted logits are rounded (~8 eps); T logsumexp steps carry that through.
      for (index_t k = 0; k < R.size(); ++k)
        ASSERT_NEAR(R_shifted.data()[k], R.data()[k], 100 * eps) << "entry " << k;
    }
}

TYPED_TEST(ForwardTest, InvariantToRowShiftsOnceConverged) {
  using Real = TypeParam;
  auto rng = make_rng(107);
  const double eps = std::numeric_limits<Real>::epsilon();
  for (int n : {2, 5, 8}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const int T = 300;
    const auto logits = uniform_batch<Real>(rng, 8, n, -1.0, 1.0);
    HostBatch<Real> shifted = logits;
    add_random_shifts(rng, shifted, /*rows=*/true);
    const auto run = run_forward(logits, T);
    for (Real v : run.violation) ASSERT_LT(v, Real(20 * n * eps));  // converged
    const auto R_shifted = run_forward(shifted, T).R;
    for (index_t k = 0; k < run.R.size(); ++k)
      ASSERT_NEAR(R_shifted.data()[k], run.R.data()[k], 100 * eps) << "entry " << k;
  }
}

// Logits of magnitude 1e3 and 1e4 (exp overflows in any precision) stay finite and
// row-stochastic; mixed signs make the result nearly a permutation-like 0/1 pattern.
TYPED_TEST(ForwardTest, FiniteForHugeLogits) {
  using Real = TypeParam;
  auto rng = make_rng(103);
  const double eps = std::numeric_limits<Real>::epsilon();
  for (double scale : {1e3, 1e4})
    for (int n : {2, 4, 8, 16})
      for (int T : {1, 20}) {
        SCOPED_TRACE("scale = " + std::to_string(scale) + ", n = " + std::to_string(n) +
                     ", T = " + std::to_string(T));
        const auto normal = normal_batch<Real>(rng, 8, n, scale);
        const auto uniform = uniform_batch<Real>(rng, 8, n, -scale, scale);
        const auto positive = uniform_batch<Real>(rng, 8, n, scale, 2 * scale);
        for (const auto* logits : {&normal, &uniform, &positive}) {
          const auto run = run_forward(*logits, T);
          EXPECT_EQ(run.invalid, 0);
          expect_row_stochastic(run.R, 4 * n * eps);
          for (Real v : run.violation) {
            EXPECT_TRUE(std::isfinite(v));
            EXPECT_LE(v, Real(n));  // column sums lie in [0, n]
          }
        }
      }
}

// The straightforward forward: exp, then alternate column and row divisions (long double).
TYPED_TEST(ForwardTest, AgreesWithExpThenDivide) {
  using Real = TypeParam;
  auto rng = make_rng(104);
  const double eps = std::numeric_limits<Real>::epsilon();
  for (int n : {1, 2, 3, 7, 16})
    for (int T : {1, 2, 5, 50}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      const index_t B = 6;
      const auto logits = uniform_batch<Real>(rng, B, n, -4.0, 4.0);
      const auto R = run_forward(logits, T).R;
      for (index_t b = 0; b < B; ++b) {
        const Square ref = reference_forward(widen(logits.data() + b * n * n, n), n, T);
        for (int k = 0; k < n * n; ++k)
          ASSERT_NEAR(R.data()[b * n * n + k], static_cast<double>(ref[k]),
                      50 * eps * (1 + static_cast<double>(ref[k])))
              << "matrix " << b << " entry " << k;
      }
    }
}

TYPED_TEST(ForwardTest, ColumnViolationMatchesItsDefinition) {
  using Real = TypeParam;
  auto rng = make_rng(105);
  const double eps = std::numeric_limits<Real>::epsilon();
  for (int n : {1, 3, 8, 16})
    for (int T : {1, 3, 100}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      const auto logits = normal_batch<Real>(rng, 10, n, 1.5);
      const auto run = run_forward(logits, T);
      for (index_t b = 0; b < logits.batch(); ++b) {
        Wide worst = 0;
        for (int j = 0; j < n; ++j) {
          Wide sum = 0;
          for (int i = 0; i < n; ++i) sum += run.R(b, i, j);
          worst = std::max(worst, std::fabs(sum - 1));
        }
        EXPECT_NEAR(run.violation[b], static_cast<double>(worst), 2 * n * eps) << "matrix " << b;
      }
    }
  // One step from strongly non-uniform logits leaves visible violations; many steps remove them.
  const auto peaked = normal_batch<Real>(rng, 10, 6, 3.0);
  for (Real v : run_forward(peaked, 1).violation) EXPECT_GT(v, Real(1e-3));
  const auto mild = uniform_batch<Real>(rng, 10, 6, 0.0, 1.0);
  for (Real v : run_forward(mild, 200).violation) EXPECT_LT(v, Real(50 * eps));
}

// A matrix with NaN or Inf logits is flagged (NaN R, NaN violation, counted) and its
// neighbours are exactly what they are when computed alone.
TYPED_TEST(ForwardTest, NonFiniteLogitsAreFlaggedPerMatrix) {
  using Real = TypeParam;
  auto rng = make_rng(106);
  const int n = 5, T = 7;
  auto logits = normal_batch<Real>(rng, 6, n);
  const Real inf = std::numeric_limits<Real>::infinity();
  logits(1, 2, 3) = std::numeric_limits<Real>::quiet_NaN();
  logits(3, 0, 0) = inf;
  logits(4, 4, 1) = -inf;
  const auto run = run_forward(logits, T);
  EXPECT_EQ(run.invalid, 3);
  for (index_t b : {1, 3, 4}) {
    EXPECT_TRUE(std::isnan(run.violation[b])) << "matrix " << b;
    for (int k = 0; k < n * n; ++k) EXPECT_TRUE(std::isnan(run.R.data()[b * n * n + k]));
  }
  for (index_t b : {0, 2, 5}) {
    HostBatch<Real> alone(1, n);
    std::memcpy(alone.data(), logits.data() + b * n * n, sizeof(Real) * n * n);
    const auto single_run = run_forward(alone, T);
    EXPECT_EQ(single_run.invalid, 0);
    EXPECT_EQ(0, std::memcmp(single_run.R.data(), run.R.data() + b * n * n, sizeof(Real) * n * n))
        << "matrix " << b;
    EXPECT_EQ(single_run.violation[0], run.violation[b]);
  }
}

// The CPU runs n = 4, 8, 16 W matrices at a time, one per SIMD lane, and a matrix alone with the
// scalar team: the same bits and violations whatever the neighbours (non-finite logits, a
// spread that needs the log domain), in the batch's last incomplete group too, for the default
// and for rows_first (read transposed).
TYPED_TEST(ForwardTest, LanesEqualOneMatrixAtATime) {
  using Real = TypeParam;
  auto rng = make_rng(107);
  for (const auto& spec : {ForwardSpec{}, ForwardSpec{ForwardConvention::rows_first, 0}})
    for (int n : {4, 8, 16})
      for (int T : {1, 3, 20}) {
        SCOPED_TRACE(describe(spec) + ", n " + std::to_string(n) + ", T " + std::to_string(T));
        const index_t B = 27;
        auto logits = uniform_batch<Real>(rng, B, n, 0.0, 4.0);
        logits(1, 2, 3) = std::numeric_limits<Real>::quiet_NaN();
        logits(10, 0, 0) = -std::numeric_limits<Real>::infinity();
        for (int j = 0; j < n; ++j) logits(6, j, 1) = Real(-300 * j);  // beyond the linear domain
        logits(26, n - 1, 0) = std::numeric_limits<Real>::infinity();  // the last group
        const auto forward = [&](const HostBatch<Real>& M, HostBatch<Real>& R,
                                 std::vector<Real>& violation) {
          return sinkhorn_forward<Real>(M.view(), T, R.view(), violation.data(), Device::cpu, spec);
        };
        HostBatch<Real> R(B, n);
        std::vector<Real> violation(B);
        EXPECT_EQ(forward(logits, R, violation), 3);
        const index_t nn = index_t(n) * n;
        for (index_t b = 0; b < B; ++b) {
          HostBatch<Real> alone(1, n), R_alone(1, n);
          std::vector<Real> violation_alone(1);
          std::memcpy(alone.data(), logits.data() + b * nn, sizeof(Real) * nn);
          forward(alone, R_alone, violation_alone);
          EXPECT_EQ(0, std::memcmp(R_alone.data(), R.data() + b * nn, sizeof(Real) * nn))
              << "matrix " << b;
          EXPECT_EQ(0, std::memcmp(&violation_alone[0], &violation[b], sizeof(Real)))
              << "matrix " << b;
        }
      }
}

TEST(ForwardApi, RejectsBadArguments) {
  HostBatch<double> logits(2, 3), R(2, 3), wrong_n(2, 4), wrong_b(3, 3);
  EXPECT_THROW(sinkhorn_forward<double>(logits.view(), 0, R.view(), nullptr), Error);
  EXPECT_THROW(sinkhorn_forward<double>(logits.view(), 2, wrong_n.view(), nullptr), Error);
  EXPECT_THROW(sinkhorn_forward<double>(logits.view(), 2, wrong_b.view(), nullptr), Error);
  HostBatch<double> empty(0, 3), empty_R(0, 3);
  EXPECT_EQ(sinkhorn_forward<double>(empty.view(), 3, empty_R.view(), nullptr), 0);
}

}  // namespace
}  // namespace sinkgrad::testing
