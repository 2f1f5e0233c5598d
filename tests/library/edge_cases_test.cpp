// Edge sizes and magnitudes: n = 1, an empty batch, logits of magnitude 1e3, G far from 1.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/host_device.hpp"
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
      // ok / not_converged / ill_conditioned write a finite gradient; a CG breakdown its last
      // iterate's where that is finite; the other failures write NaN, never garbage.
      if (sol.status[b] == SolveStatus::ok || sol.status[b] == SolveStatus::not_converged ||
          sol.status[b] == SolveStatus::ill_conditioned) {
        EXPECT_TRUE(finite) << "matrix " << b;
      } else if (!(sol.status[b] == SolveStatus::breakdown && finite)) {
        for (int k = 0; k < n * n; ++k) EXPECT_TRUE(std::isnan(sol.grad.data()[b * n * n + k]));
      }
    }
  }
}

// unit_scale, the power of two CG's rescaled start and direct(plain)'s near-cut measure multiply
// by, on every exponent with fresh mantissas: finite, and bringing a normal x to [1, 2) (the
// largest binade too, by a subnormal power); a subnormal x to below 1 by at least 2^(max - 2)
// (where 2^-ilogb(x) would overflow); 1 for 0, negative numbers, infinities and NaN.
TYPED_TEST(EdgeCases, UnitScaleBringsEveryExponentToOneTwo) {
  using Real = TypeParam;
  using Limits = std::numeric_limits<Real>;
  auto rng = make_rng(605);
  std::uniform_real_distribution<Real> mantissa(1, 2);
  for (Real special : {Real(0), Real(-1), Limits::infinity(), -Limits::infinity(),
                       Limits::quiet_NaN(), -Limits::denorm_min()})
    EXPECT_EQ(math::unit_scale(special), Real(1)) << special;
  for (int e = Limits::min_exponent - Limits::digits - 1; e < Limits::max_exponent; ++e)
    for (int draw = 0; draw < 16; ++draw) {
      const Real m = draw == 0   ? Real(1)
                     : draw == 1 ? std::nextafter(Real(2), Real(1))
                                 : mantissa(rng);
      const Real x = std::ldexp(m, e);  // rounds to a subnormal below 2^(min_exponent - 1)
      if (!(x > 0)) continue;
      const Real s = math::unit_scale(x);
      int s_exponent = 0;
      ASSERT_EQ(std::frexp(s, &s_exponent), Real(0.5)) << x << ": not a power of two, " << s;
      ASSERT_TRUE(std::isfinite(s)) << x;
      const long double scaled = static_cast<long double>(x) * static_cast<long double>(s);
      if (x >= Limits::min()) {
        EXPECT_TRUE(scaled >= 1 && scaled < 2) << x << " times " << s << " = " << scaled;
      } else {  // 2^-ilogb(x) may overflow: the largest power that keeps x s below 1 is enough
        EXPECT_TRUE(scaled > 0 && scaled < 1) << x << " times " << s;
        EXPECT_GE(s, std::ldexp(Real(1), Limits::max_exponent - 2)) << x;
      }
    }
}

// dL/dM is linear in G, and a power of two commutes with every rounding that stays in the normal
// range: G times 2^k must give exactly 2^k times the gradient, the same status and iterations,
// after the default forward and the eps conventions (tilekernels, rows_first with eps).
// k is taken where G ⊙ G leaves the finite range (float32 2^±100, about 1e±30; float64 2^±600),
// which made CG's r^T r infinite or 0 and CG stop at once with "ok" and a wrong gradient
// (solvers/common/cg_math.hpp now rescales b there). At 2^-k a solver without that rescaling
// (unrolled, direct) may meet subnormal intermediates, G's small entries times R's, whose
// rounding is absolute: there an entry may differ by up to the least normal number (unrolled,
// float32, n = 16, T = 500: -8.14118000e-34 against -8.14117908e-34).
TYPED_TEST(EdgeCases, GradientScalesExactlyWithAPowerOfTwoTimesG) {
  using Real = TypeParam;
  auto rng = make_rng(604);
  const int far = sizeof(Real) == 4 ? 100 : 600;
  const Real smallest_normal = std::numeric_limits<Real>::min();
  const ForwardSpec specs[] = {ForwardSpec{}, make_forward_spec("tilekernels"),
                               make_forward_spec("rows_first", 1e-8)};
  for (int n : {2, 4, 8, 16}) {
    const auto M = uniform_batch<Real>(rng, 16, n, 0.0, 3.0);
    const auto G = normal_batch<Real>(rng, 16, n);
    for (int T : {3, 500})
      for (const ForwardSpec& spec : specs) {
        HostBatch<Real> R(M.batch(), n);
        sinkhorn_forward<Real>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
        for (const auto& config : all_solver_configs()) {
          const auto base = solve(*config.create(), M, R, G, T, true, spec);
          for (int k : {-far, far}) {
            SCOPED_TRACE(config.label() + ", n = " + std::to_string(n) +
                         ", T = " + std::to_string(T) + ", G times 2^" + std::to_string(k));
            HostBatch<Real> scaled(G.batch(), n);
            for (index_t i = 0; i < G.batch() * n * n; ++i)
              scaled.data()[i] = std::ldexp(G.data()[i], k);
            const auto sol = solve(*config.create(), M, R, scaled, T, true, spec);
            EXPECT_EQ(sol.status, base.status);
            EXPECT_EQ(sol.iterations, base.iterations);
            // the gradient and the residual history (CG's) both 2^k times
            const auto expect_scaled = [&](const Real* got, const Real* unscaled, index_t size,
                                           const char* what) {
              index_t differing = 0;
              for (index_t i = 0; i < size; ++i) {
                const Real expected = std::ldexp(unscaled[i], k);
                const bool same = got[i] == expected ||
                                  (std::isnan(got[i]) && std::isnan(expected)) ||
                                  (k < 0 && std::fabs(got[i] - expected) <= smallest_normal);
                if (!same && ++differing <= 3)
                  ADD_FAILURE() << what << " entry " << i << ": " << got[i] << ", expected "
                                << expected;
              }
              EXPECT_EQ(differing, 0) << what;
            };
            expect_scaled(sol.grad.data(), base.grad.data(), G.batch() * n * n, "gradient");
            ASSERT_EQ(sol.history.size(), base.history.size());
            expect_scaled(sol.history.data(), base.history.data(),
                          static_cast<index_t>(base.history.size()), "history");
          }
        }
      }
  }
}

}  // namespace
}  // namespace sinkgrad::testing
