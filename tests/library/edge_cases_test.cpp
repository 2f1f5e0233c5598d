// Edge sizes and magnitudes: n = 1, an empty batch, logits of magnitude 1e3.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
class EdgeCases : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(EdgeCases, Precisions);

// For n = 1, R = [1] whatever M is, so dL/dM = 0 exactly, for every solver.
TYPED_TEST(EdgeCases, OneByOneGradientIsExactlyZero) {
  using Real = TypeParam;
  auto rng = make_rng(600);
  const auto M = normal_batch<Real>(rng, 9, 1, 50.0);
  const auto G = normal_batch<Real>(rng, 9, 1, 3.0);
  for (int T : {1, 4}) {
    const auto R = forward(M, T);
    for (index_t b = 0; b < R.batch(); ++b) EXPECT_EQ(R.data()[b], Real(1));
    for (const auto& config : all_solver_configs()) {
      SCOPED_TRACE(config.label() + ", T = " + std::to_string(T));
      const auto sol = solve(*config.create(), M, R, G, T);
      for (index_t b = 0; b < R.batch(); ++b) {
        EXPECT_EQ(sol.status[b], SolveStatus::ok);
        EXPECT_EQ(sol.grad.data()[b], Real(0)) << "matrix " << b;
      }
    }
  }
}

// B = 0 is a valid, empty solve: nothing is read or written, no output arrays are needed.
TYPED_TEST(EdgeCases, EmptyBatchIsANoOp) {
  using Real = TypeParam;
  for (const auto& config : all_solver_configs()) {
    SCOPED_TRACE(config.label());
    HostBatch<Real> M(0, 4), R(0, 4), G(0, 4), grad(0, 4);
    BackwardProblem<Real> problem{M.view(), R.view(), G.view(), 3};
    BackwardResult<Real> result;
    result.grad_logits = grad.view();
    EXPECT_NO_THROW(config.create()->solve(problem, result));
    const auto sol = solve(*config.create(), M, R, G, 3, /*record_history=*/true);
    EXPECT_TRUE(sol.status.empty());
  }
}

// Logits of magnitude 1e3: exp overflows, the log-domain forward and replay do not.
TYPED_TEST(EdgeCases, UnrolledFiniteForHugeLogits) {
  using Real = TypeParam;
  auto rng = make_rng(601);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  for (int n : {2, 4, 8, 16})
    for (int T : {1, 5, 20}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      const auto normal = normal_batch<Real>(rng, 16, n, 1e3);
      const auto uniform = uniform_batch<Real>(rng, 16, n, -1e3, 1e3);
      const auto positive = uniform_batch<Real>(rng, 16, n, 1e3, 1.1e3);
      for (const auto* M : {&normal, &uniform, &positive}) {
        const auto G = normal_batch<Real>(rng, 16, n);
        const auto sol = solve(*solver, *M, forward(*M, T), G, T);
        for (index_t b = 0; b < M->batch(); ++b) ASSERT_EQ(sol.status[b], SolveStatus::ok);
        for (index_t k = 0; k < sol.grad.size(); ++k) {
          ASSERT_TRUE(std::isfinite(sol.grad.data()[k])) << "entry " << k;
        }
      }
    }
}

// The implicit solvers take R and G only; R from huge logits is a valid (if nearly 0/1) input.
TYPED_TEST(EdgeCases, ImplicitSolversFiniteOrFlaggedForHugeLogits) {
  using Real = TypeParam;
  auto rng = make_rng(602);
  const int n = 6, T = 20;
  const auto M = normal_batch<Real>(rng, 32, n, 1e3);
  const auto G = normal_batch<Real>(rng, 32, n);
  const auto R = forward(M, T);
  for (const auto& config : implicit_solver_configs()) {
    SCOPED_TRACE(config.label());
    const auto sol = solve(*config.create(), M, R, G, T);
    for (index_t b = 0; b < M.batch(); ++b) {
      bool finite = true;
      for (int k = 0; k < n * n; ++k)
        finite = finite && std::isfinite(sol.grad.data()[b * n * n + k]);
      // ok / not_converged / ill_conditioned write a finite gradient; failures write NaN,
      // never garbage.
      if (sol.status[b] == SolveStatus::ok || sol.status[b] == SolveStatus::not_converged ||
          sol.status[b] == SolveStatus::ill_conditioned)
        EXPECT_TRUE(finite) << "matrix " << b;
      else
        for (int k = 0; k < n * n; ++k) EXPECT_TRUE(std::isnan(sol.grad.data()[b * n * n + k]));
    }
  }
}

}  // namespace
}  // namespace sinkgrad::testing
