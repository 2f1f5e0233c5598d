// SolveDiagnostics on the CPU: the violations and zero counts against a plain loop over R, CG's
// final relative residual against its tolerance and its residual history, NaN where no CG ran,
// and the gradient, status and iterations unchanged by asking for diagnostics.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
struct Diagnosed {
  Solution<Real> solution;
  std::vector<Real> row, column, residual;
  std::vector<std::int32_t> zeros;
};

// Solves with every diagnostic asked for (sentinels first, so that unwritten entries show).
template <class Real>
Diagnosed<Real> solve_diagnosed(const BackwardSolver& solver, const HostBatch<Real>& M,
                                const HostBatch<Real>& R, const HostBatch<Real>& G, int T,
                                bool record_history = false) {
  Diagnosed<Real> out;
  const auto count = static_cast<std::size_t>(R.batch());
  out.row.assign(count, Real(-1));
  out.column.assign(count, Real(-1));
  out.residual.assign(count, Real(-1));
  out.zeros.assign(count, -1);
  Solution<Real>& sol = out.solution;
  sol.grad = HostBatch<Real>(R.batch(), R.n());
  sol.status.assign(count, SolveStatus::ok);
  sol.iterations.assign(count, -1);
  BackwardResult<Real> result{sol.grad.view(), sol.status.data(), sol.iterations.data()};
  if (record_history) {
    sol.history_stride = solver.history_length(R.n(), precision_of<Real>());
    sol.history.assign(count * static_cast<std::size_t>(sol.history_stride), Real(0));
    result.residual_history = sol.history.data();
    result.history_stride = sol.history_stride;
  }
  result.diagnostics = {out.row.data(), out.column.data(), out.residual.data(), out.zeros.data()};
  solver.solve({M.view(), R.view(), G.view(), T}, result);
  return out;
}

// The reference: sums in long double, the worst line, the zeros counted.
template <class Real>
void expect_matches_reference_loop(const HostBatch<Real>& R, const Diagnosed<Real>& d) {
  const int n = R.n();
  // The library sums in float64 and rounds the result to Real.
  const double rounding = std::numeric_limits<Real>::epsilon();
  for (index_t b = 0; b < R.batch(); ++b) {
    long double row = 0, column = 0;
    std::int32_t zeros = 0;
    for (int i = 0; i < n; ++i) {
      long double row_sum = 0, column_sum = 0;
      for (int j = 0; j < n; ++j) {
        row_sum += R(b, i, j);
        column_sum += R(b, j, i);
        zeros += R(b, i, j) == Real(0) ? 1 : 0;
      }
      row = std::max(row, std::fabs(row_sum - 1));
      column = std::max(column, std::fabs(column_sum - 1));
    }
    const auto i = static_cast<std::size_t>(b);
    const double slack = 1e-15 * n;
    EXPECT_NEAR(d.row[i], double(row), rounding * double(row) + slack) << "matrix " << b;
    EXPECT_NEAR(d.column[i], double(column), rounding * double(column) + slack) << "matrix " << b;
    EXPECT_EQ(d.zeros[i], zeros) << "matrix " << b;
  }
}

template <class Real>
class Diagnostics : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Diagnostics, Precisions);

// Non-converged forwards (T = 1, 3), n = 4, 5, 16 and 33, moderate and (float32) saturating
// logits: every solver's diagnostics against the reference loop, its outputs bitwise those of a
// solve without diagnostics, the residual within CG's tolerance or NaN.
TYPED_TEST(Diagnostics, MatchReferenceLoopForEverySolver) {
  using Real = TypeParam;
  auto rng = make_rng(910);
  const index_t B = 24;
  const Real tolerance = std::is_same_v<Real, float> ? Real(1e-5) : Real(1e-12);
  const double scales[] = {4.0, std::is_same_v<Real, float> ? 80.0 : 30.0};
  for (const int n : {4, 5, 16, 33})
    for (const int T : {1, 3})
      for (const double scale : scales) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T) +
                     ", |M| <= " + std::to_string(scale));
        const auto M = uniform_batch<Real>(rng, B, n, -scale, scale);
        const auto G = normal_batch<Real>(rng, B, n);
        const auto R = forward(M, T);
        index_t saturated = 0;
        for (auto config : all_solver_configs()) {
          // floor=0: CG's relative test alone, so that ok means a residual within tolerance
          // (the floor may stop it above, where b cancels: saturated logits do that).
          if (config.name.rfind("cg_", 0) == 0) config.options["floor"] = "0";
          SCOPED_TRACE(config.label());
          const auto solver = config.create();
          const auto d = solve_diagnosed(*solver, M, R, G, T);
          expect_matches_reference_loop(R, d);
          const auto plain = solve(*solver, M, R, G, T);
          EXPECT_EQ(0, std::memcmp(plain.grad.data(), d.solution.grad.data(),
                                   sizeof(Real) * static_cast<std::size_t>(R.size())));
          EXPECT_EQ(plain.status, d.solution.status);
          EXPECT_EQ(plain.iterations, d.solution.iterations);
          const bool cg = config.name.rfind("cg_", 0) == 0;
          for (index_t b = 0; b < B; ++b) {
            const auto i = static_cast<std::size_t>(b);
            const SolveStatus status = d.solution.status[i];
            saturated += d.zeros[i] > 0 ? 1 : 0;
            // A CG breakdown reports the residual of the last iterate it keeps (NaN where that
            // gives no finite gradient).
            if (status == SolveStatus::breakdown) continue;
            if (!cg || status == SolveStatus::invalid_input)
              EXPECT_TRUE(std::isnan(d.residual[i])) << "matrix " << b;
            else if (status == SolveStatus::ok)
              EXPECT_LE(d.residual[i], tolerance) << "matrix " << b;
            else
              EXPECT_GT(d.residual[i], tolerance) << "matrix " << b;  // not_converged
            // The exact gradient is 0 where R is: R ⊙ (...) keeps it so.
            if (status == SolveStatus::ok && config.name != "unrolled") {
              const index_t nn = index_t(n) * n;
              for (index_t k = b * nn; k < (b + 1) * nn; ++k) {
                if (R.data()[k] == Real(0)) {
                  EXPECT_EQ(d.solution.grad.data()[k], Real(0));
                }
              }
            }
          }
        }
        if (std::is_same_v<Real, float> && scale > 50 && n >= 16) {
          EXPECT_GT(saturated, 0) << "the saturating logits left no zero in R";
        }
      }
}

// The final relative residual is the history's last entry over its first (the same r^T r,
// rounded apart), also for CG stopped by max_iterations.
TYPED_TEST(Diagnostics, RelativeResidualIsTheHistorysLastOverFirst) {
  using Real = TypeParam;
  auto rng = make_rng(911);
  const index_t B = 16;
  for (const int n : {4, 8, 16})
    for (const char* max_iterations : {"auto", "2"})
      for (SolverConfig config : implicit_solver_configs()) {
        if (config.name.rfind("cg_", 0) != 0) continue;
        config.options["max_iterations"] = max_iterations;
        SCOPED_TRACE(config.label() + ", n = " + std::to_string(n));
        const auto M = uniform_batch<Real>(rng, B, n, 0.0, 4.0);
        const auto G = normal_batch<Real>(rng, B, n);
        const auto R = forward(M, 3);
        const auto solver = config.create();
        const auto d = solve_diagnosed(*solver, M, R, G, 3, true);
        const auto& sol = d.solution;
        for (index_t b = 0; b < B; ++b) {
          const auto i = static_cast<std::size_t>(b);
          const Real* history = sol.history.data() + i * std::size_t(sol.history_stride);
          const double expected = double(history[sol.iterations[i]]) / double(history[0]);
          EXPECT_NEAR(d.residual[i], expected, 8 * std::numeric_limits<Real>::epsilon() * expected)
              << "matrix " << b;
        }
      }
}

// Each diagnostic may be asked for alone; a matrix with a zero row is invalid input with a NaN
// residual but its violations and zeros are still measured.
TYPED_TEST(Diagnostics, EachPointerAloneAndInvalidInput) {
  using Real = TypeParam;
  auto rng = make_rng(912);
  const int n = 5, T = 2;
  const index_t B = 6;
  const auto M = uniform_batch<Real>(rng, B, n, 0.0, 3.0);
  const auto G = normal_batch<Real>(rng, B, n);
  auto R = forward(M, T);
  for (int j = 0; j < n; ++j) R(2, 3, j) = 0;  // zero row
  const auto solver = SolverConfig{"cg_corrected", {}}.create();
  const auto all = solve_diagnosed(*solver, M, R, G, T);
  expect_matches_reference_loop(R, all);
  EXPECT_EQ(all.solution.status[2], SolveStatus::invalid_input);
  EXPECT_TRUE(std::isnan(all.residual[2]));
  EXPECT_EQ(all.zeros[2], n);
  EXPECT_NEAR(all.row[2], 1.0, 1e-15);
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE("diagnostic " + std::to_string(which));
    std::vector<Real> value(static_cast<std::size_t>(B), Real(-1));
    std::vector<std::int32_t> zeros(static_cast<std::size_t>(B), -1);
    HostBatch<Real> grad(B, n);
    std::vector<SolveStatus> status(static_cast<std::size_t>(B));
    std::vector<std::int32_t> iterations(static_cast<std::size_t>(B));
    BackwardResult<Real> result{grad.view(), status.data(), iterations.data()};
    if (which == 0) result.diagnostics.row_violation = value.data();
    if (which == 1) result.diagnostics.column_violation = value.data();
    if (which == 2) result.diagnostics.relative_residual = value.data();
    if (which == 3) result.diagnostics.zero_entries = zeros.data();
    solver->solve({M.view(), R.view(), G.view(), T}, result);
    const std::vector<Real>& expected = which == 0   ? all.row
                                        : which == 1 ? all.column
                                                     : all.residual;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (which == 3) {
        EXPECT_EQ(zeros[i], all.zeros[i]);
      } else if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(value[i]));
      } else {
        EXPECT_EQ(value[i], expected[i]);
      }
    }
  }
}

// NaN in R shows as NaN violations, not as a plausible number.
TEST(Diagnostics, NonFiniteRGivesNaNViolations) {
  auto rng = make_rng(913);
  const auto M = uniform_batch<double>(rng, 3, 4, 0.0, 2.0);
  const auto G = normal_batch<double>(rng, 3, 4);
  auto R = forward(M, 2);
  R(1, 2, 1) = std::numeric_limits<double>::quiet_NaN();
  const auto solver = SolverConfig{"direct", {{"system", "corrected"}}}.create();
  const auto d = solve_diagnosed(*solver, M, R, G, 2);
  EXPECT_TRUE(std::isnan(d.row[1]));
  EXPECT_TRUE(std::isnan(d.column[1]));
  EXPECT_FALSE(std::isnan(d.row[0]));
  EXPECT_FALSE(std::isnan(d.column[2]));
}

}  // namespace
}  // namespace sinkgrad::testing
