// The implicit solvers under bases that are no scaling of exp(M) (tilekernels' softmax_rows(M) +
// eps, mhc_triton's |M| + eps): their dL/d(log B) carried to M (core/log_base_chain.hpp) is the
// derivative of the forward once it has converged, on saturated logits where the softmax falls
// far below eps; the iterates a study records are carried alike; without the logits such a
// solve is refused.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/support/convention_reference.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

struct BaseCase {
  const char* convention;
  double eps;
  double scale;     // logits scale N(0, scale^2) + I
  double diagonal;  // added to the diagonal
};

// The largest change of matrix b's entries between two forwards.
double moved(const HostBatch<double>& a, const HostBatch<double>& b, index_t m) {
  double worst = 0;
  for (int i = 0; i < a.n(); ++i)
    for (int j = 0; j < a.n(); ++j) worst = std::max(worst, std::abs(a(m, i, j) - b(m, i, j)));
  return worst;
}

// Whether a row of matrix b has a softmax entry below eps: where a gradient not carried to M is
// wrong by O(1).
bool softmax_below(const HostBatch<double>& M, index_t b, double eps) {
  for (int i = 0; i < M.n(); ++i) {
    double top = M(b, i, 0), sum = 0;
    for (int j = 0; j < M.n(); ++j) top = std::max(top, M(b, i, j));
    for (int j = 0; j < M.n(); ++j) sum += std::exp(M(b, i, j) - top);
    for (int j = 0; j < M.n(); ++j)
      if (std::exp(M(b, i, j) - top) / sum < eps) return true;
  }
  return false;
}

// Where the forward has converged (R at T = 400 and T = 800 within 1e-13) the implicit gradient is
// the T-step forward's derivative to rounding times the conditioning, eps in the guards included.
// Matrices that are still moving are left out: there the implicit formula's error is the distance
// to the fixed point over the spectral gap, whatever the base.
TEST(LogBaseChain, ImplicitSolversDifferentiateTheBaseAtConvergence) {
  const std::vector<BaseCase> cases = {{"tilekernels", 1e-6, 6.0, 1.0},
                                       {"tilekernels", 1e-3, 3.0, 0.0},
                                       {"mhc_triton", 1e-8, 1.0, 0.0},
                                       {"mhc_triton", 1e-4, 1.0, 0.5}};
  const std::vector<SolverConfig> configs = {{"cg_corrected", {}},
                                             {"cg_corrected", {{"project", "false"}}},
                                             {"direct", {{"system", "corrected"}}},
                                             {"auto", {}}};
  const int T = 400;
  for (const auto& c : cases)
    for (const int n : {3, 4, 8}) {
      SCOPED_TRACE(std::string(c.convention) + " eps " + std::to_string(c.eps) + " n " +
                   std::to_string(n));
      const ForwardSpec spec = make_forward_spec(c.convention, c.eps);
      auto rng = make_rng(static_cast<std::uint64_t>(4100 + n));
      const index_t batch = 64;
      auto M = normal_batch<double>(rng, batch, n, c.scale);
      for (index_t b = 0; b < batch; ++b)
        for (int i = 0; i < n; ++i) M(b, i, i) += c.diagonal;
      const auto G = normal_batch<double>(rng, batch, n);
      HostBatch<double> R(batch, n), later(batch, n);
      sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
      sinkhorn_forward<double>(M.view(), 2 * T, later.view(), nullptr, Device::cpu, spec);
      const bool tape = std::string(c.convention) == "tilekernels";
      const auto exact =
          solve(*SolverRegistry::global().create("unrolled"), M, R, G, T, false, spec);
      const int nn = n * n;
      for (const auto& config : configs) {
        SCOPED_TRACE(config.label());
        const auto implicit = solve(*config.create(), M, R, G, T, false, spec);
        int checked = 0, sensitive = 0;
        for (index_t b = 0; b < batch; ++b) {
          if (moved(R, later, b) > 1e-13) continue;
          // The float64 tape of the forward (tests/support), or unrolled where it has none
          // (checked against mHC-triton's own code in convention_presets_test.cpp).
          std::vector<double> reference(exact.grad.data() + b * nn,
                                        exact.grad.data() + (b + 1) * nn);
          if (tape) {
            const Square ref = convention_unrolled_reference(widen(M.data() + b * nn, n),
                                                             widen(G.data() + b * nn, n), n, T,
                                                             c.convention, c.eps);
            for (int k = 0; k < nn; ++k) reference[k] = static_cast<double>(ref[k]);
          }
          ASSERT_TRUE(is_success(implicit.status[static_cast<std::size_t>(b)])) << b;
          EXPECT_LE(relative_error(implicit.grad.data() + b * nn, reference.data(), nn), 1e-8)
              << "matrix " << b;
          ++checked;
          sensitive += tape ? softmax_below(M, b, c.eps) : 1;
        }
        EXPECT_GE(checked, batch / 4) << "too few converged matrices to test";
        EXPECT_GE(sensitive, 3) << "no converged matrix where the carry matters";
      }
    }
}

// R and G suffice an implicit solver only where the base scales exp(M); elsewhere a solve without
// the logits is refused before anything is written.
TEST(LogBaseChain, WithoutTheLogitsTheCarryIsRefused) {
  auto rng = make_rng(4200);
  const int n = 4, T = 5;
  const auto M = normal_batch<double>(rng, 3, n);
  const auto G = normal_batch<double>(rng, 3, n);
  const HostBatch<double> none(0, n);
  for (const char* name : {"cg_plain", "cg_corrected", "direct"}) {
    SCOPED_TRACE(name);
    const auto solver = SolverRegistry::global().create(name);
    for (const char* convention : {"tilekernels", "mhc_triton"}) {
      const ForwardSpec spec = make_forward_spec(convention);
      HostBatch<double> R(3, n);
      sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
      try {
        solve(*solver, none, R, G, T, false, spec);
        ADD_FAILURE() << convention << ": solved without the logits";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("needs the logits"), std::string::npos) << e.what();
      }
    }
    for (const char* convention : {"columns_first", "rows_first", "megatron_main"}) {
      const ForwardSpec spec = make_forward_spec(convention);
      HostBatch<double> R(3, n);
      sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
      const auto without = solve(*solver, none, R, G, T, false, spec);
      const auto with = solve(*solver, M, R, G, T, false, spec);
      EXPECT_TRUE(same_bits(without.grad.data(), with.grad.data(), 3 * n * n)) << convention;
    }
    const ForwardSpec softmax = make_forward_spec("tilekernels", 0.0);
    HostBatch<double> R(3, n);
    sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, softmax);
    EXPECT_NO_THROW(solve(*solver, none, R, G, T, false, softmax)) << "tilekernels eps 0";
  }
}

}  // namespace
}  // namespace sinkgrad::testing
