// The plain systems are indefinite away from convergence, where CG's recurrence residual can
// drift from b - A x: saturated logits after one step leave an eigenvalue of rounding size that
// b meets, and the recurrence then reports convergence at an iterate 1e13 times too large.
// cg_plain must not call such a solve ok: every gradient it reports ok stays near the block
// system's minimum-norm least-squares solution (reference_math.hpp, long double).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

const SolverConfig plain_configs[] = {
    {"cg_plain", {{"system", "schur"}, {"project", "false"}}},
    {"cg_plain", {{"system", "block"}, {"project", "false"}}},
};

// The matrix an audit found: n = 3, logits about ±30, T = 1, columns_first, float64. Both
// systems said ok with |dL/dM| near 3e13 (the exact one is 0.2, the pseudo-inverse's 0.44).
TEST(PlainTrueResidual, SaturatedMatrixThatFooledTheRecurrenceIsNotOk) {
  HostBatch<double> M(1, 3), G(1, 3), R(1, 3);
  const double logits[] = {-29.776, -30.382, 31.441, -30.75, 31.153, -30.9, 30.148, 29.384, 30.647};
  const double grad_output[] = {0.22, 0.565, 0.483, -0.445, 1.144, -0.405, -2.049, 0.198, -0.03};
  std::copy_n(logits, 9, M.data());
  std::copy_n(grad_output, 9, G.data());
  sinkhorn_forward<double>(M.view(), 1, R.view(), nullptr, Device::cpu);
  for (const SolverConfig& config : plain_configs) {
    const auto out = solve(*config.create(), M, R, G, 1);
    EXPECT_EQ(out.status[0], SolveStatus::ill_conditioned) << config.label();
  }
}

// Saturated logits K sign(N) + N(0, 1): every gradient reported ok is within max |G| of the
// reference (a bound loose enough for the plain system's ill-posedness, far below the blow-up).
TEST(PlainTrueResidual, EveryOkGradientOnSaturatedLogitsIsNearTheReference) {
  std::mt19937_64 rng = make_rng(20261207);
  const index_t batch = 2000;
  for (int n : {3, 4})
    for (int T : {1, 2})
      for (double K : {30.0, 80.0}) {
        auto M = normal_batch<double>(rng, batch, n);
        std::bernoulli_distribution sign(0.5);
        for (index_t k = 0; k < M.size(); ++k) M.data()[k] += sign(rng) ? K : -K;
        HostBatch<double> R(batch, n);
        sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu);
        const auto G = normal_batch<double>(rng, batch, n);
        for (const SolverConfig& config : plain_configs) {
          const auto out = solve(*config.create(), M, R, G, T);
          int ok = 0, far = 0;
          for (index_t b = 0; b < batch; ++b) {
            if (out.status[static_cast<size_t>(b)] != SolveStatus::ok) continue;
            ++ok;
            const int nn = n * n;
            Square r(R.data() + b * nn, R.data() + (b + 1) * nn);
            Square g(G.data() + b * nn, G.data() + (b + 1) * nn);
            const Square reference = reference_implicit(r, g, n, ReferenceSystem::plain);
            double size = 0, apart = 0;
            for (int k = 0; k < nn; ++k) {
              size = std::max(size, std::abs(double(g[k])));
              apart = std::max(apart, std::abs(out.grad.data()[b * nn + k] - double(reference[k])));
            }
            if (!(apart <= size)) ++far;
          }
          const std::string where = config.label() + " n=" + std::to_string(n) +
                                    " T=" + std::to_string(T) + " K=" + std::to_string(K);
          EXPECT_EQ(far, 0) << where << ": of " << ok << " ok";
          EXPECT_GT(ok, batch / 2) << where;  // the check keeps the solves that are fine
        }
      }
}

}  // namespace
}  // namespace sinkgrad::testing
