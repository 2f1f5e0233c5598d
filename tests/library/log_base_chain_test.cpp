// The implicit solvers under bases that are no scaling of exp(M) (tilekernels' softmax_rows(M) +
// eps, mhc_triton's |M| + eps): their dL/d(log B) carried to M (core/log_base_chain.hpp) is the
// derivative of the forward once it has converged, on saturated logits where the softmax falls
// far below eps; the iterates a study records are carried alike; without the logits such a
// solve is refused.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/log_base_chain.hpp"
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

// The base's derivative applied to g, from its Jacobian in long double: for softmax_rows + eps,
// d log(s_j + eps) / dm_k = s_j (delta_jk - s_k) / (s_j + eps), summed against g_j; for |m| + eps,
// g_k sign(m_k) / (|m_k| + eps). `terms`: the size of what entry k sums, |w_k g_k| + s_k
// sum_j |w_j g_j| (w = s / (s + eps)), the scale of its rounding, since the two cancel where the
// softmax saturates.
std::vector<long double> carried_reference(ForwardBase base, long double eps,
                                           const std::vector<double>& m,
                                           const std::vector<double>& g,
                                           std::vector<long double>& terms) {
  const std::size_t n = m.size();
  std::vector<long double> out(n, 0.0L);
  terms.assign(n, 0.0L);
  if (base == ForwardBase::abs) {
    for (std::size_t k = 0; k < n; ++k) {
      out[k] = m[k] == 0 ? 0.0L
                         : g[k] * (m[k] > 0 ? 1.0L : -1.0L) / (std::fabs((long double)m[k]) + eps);
      terms[k] = std::fabs(out[k]);
    }
    return out;
  }
  long double total = 0, absolute = 0;
  std::vector<long double> s(n), w(n);
  for (std::size_t k = 0; k < n; ++k) total += std::exp((long double)m[k]);
  for (std::size_t k = 0; k < n; ++k) s[k] = std::exp((long double)m[k]) / total;
  for (std::size_t k = 0; k < n; ++k) w[k] = s[k] / (s[k] + eps);
  for (std::size_t j = 0; j < n; ++j) absolute += std::fabs(w[j] * g[j]);
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t j = 0; j < n; ++j)
      out[k] += g[j] * s[j] * ((j == k ? 1.0L : 0.0L) - s[k]) / (s[j] + eps);
    terms[k] = std::fabs(w[k] * g[k]) + s[k] * absolute;
  }
  return out;
}

// One row carried by the shared text (the CPU playing carry_width(n) lanes: 1 up to n = 8, then 8,
// with one lane owning two entries at n = 9 and uneven counts at n = 31, 33, 100 and 1000) against
// the Jacobian, on moderate and saturated rows, in float64 and float32. Each entry is held to its
// terms' rounding: the exponentials' relative error grows with |m| (and float32 rounds M itself),
// a sum's with the number of its terms.
TEST(LogBaseChain, RowTextIsTheBasesDerivative) {
  EXPECT_EQ(carry_width(1), 1);
  EXPECT_EQ(carry_width(8), 1);
  EXPECT_EQ(carry_width(9), 8);
  EXPECT_EQ(carry_width(1000), 8);
  std::mt19937_64 rng(4300);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const ForwardBase base : {ForwardBase::softmax_rows, ForwardBase::abs})
    for (const double eps : {1e-6, 1e-3})
      for (const double scale : {1.0, 12.0})
        for (const int n : {1, 2, 3, 5, 8, 9, 16, 31, 32, 33, 100, 1000}) {
          SCOPED_TRACE("base " + std::to_string(int(base)) + " eps " + std::to_string(eps) +
                       " scale " + std::to_string(scale) + " n " + std::to_string(n));
          std::vector<double> m(n), g(n);
          for (int k = 0; k < n; ++k) m[k] = scale * normal(rng);
          for (int k = 0; k < n; ++k) g[k] = normal(rng);
          if (base == ForwardBase::abs && n > 2) m[1] = 0;  // no slope there
          std::vector<long double> terms;
          const auto reference = carried_reference(base, eps, m, g, terms);
          double largest = 0;
          for (const double v : m) largest = std::max(largest, std::fabs(v));
          std::vector<double> wide = g;
          carry_row_to_logits(RowLanes(n), base, eps, m.data(), wide.data());
          std::vector<float> narrow(g.begin(), g.end()), m32(m.begin(), m.end());
          carry_row_to_logits(RowLanes(n), base, static_cast<float>(eps), m32.data(),
                              narrow.data());
          const long double wide_rounding = 8 * (1 + largest + n) * 1.1e-16L;
          const long double narrow_rounding = 8 * (1 + largest + n) * 6e-8L;
          for (int k = 0; k < n; ++k) {
            EXPECT_LE(std::fabs(wide[k] - reference[k]), wide_rounding * terms[k]) << k;
            EXPECT_LE(std::fabs(narrow[k] - reference[k]), narrow_rounding * terms[k]) << k;
          }
        }
}

// Matrices whose gradient is already dL/dM (status fallback) are left as they are; every other
// row is carried.
TEST(LogBaseChain, FallbackRowsAreNotCarried) {
  const int n = 3;
  std::vector<double> grad(2 * n * n, 1.0);
  std::vector<SolveStatus> status = {SolveStatus::fallback, SolveStatus::ok};
  std::vector<std::int32_t> iterations(2, 0);
  const BackwardResult<double> result{BatchView<double>{grad.data(), 2, n, MemorySpace::host},
                                      status.data(), iterations.data()};
  for (index_t row = 0; row < 2 * n; ++row)
    EXPECT_EQ(carries_result_row(result, n, row), row >= n) << row;
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

// |M| + eps with eps = 0 and a zero row of M: the forward divides 0 by 0, so R is NaN from finite
// logits. No solver may pass that off as a gradient: each one's status is a failure and its
// gradient NaN (|M|'s missing slope at M = 0 must not turn the NaN into zeros), while a normal
// matrix in the same batch gets what it gets alone.
TEST(LogBaseChain, ANanForwardFromFiniteLogitsIsNoSuccess) {
  const int n = 4, T = 20;
  const index_t batch = 3;
  auto rng = make_rng(4300);
  auto M = normal_batch<double>(rng, batch, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      M(0, i, j) = 0;              // all zero
      if (i == 2) M(1, i, j) = 0;  // one zero row
    }
  const auto G = normal_batch<double>(rng, batch, n);
  const ForwardSpec spec = make_forward_spec("mhc_triton", 0.0);
  HostBatch<double> R(batch, n);
  sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
  ASSERT_TRUE(std::isnan(R(0, 0, 0)) && std::isnan(R(1, 0, 0))) << "the case tests a NaN forward";
  HostBatch<double> M2(1, n), R2(1, n), G2(1, n);
  const int nn = n * n;
  std::copy(M.data() + 2 * nn, M.data() + 3 * nn, M2.data());
  std::copy(R.data() + 2 * nn, R.data() + 3 * nn, R2.data());
  std::copy(G.data() + 2 * nn, G.data() + 3 * nn, G2.data());
  for (const char* name : {"unrolled", "cg_plain", "cg_corrected", "direct", "auto"}) {
    SCOPED_TRACE(name);
    const auto solver = SolverRegistry::global().create(name);
    const auto result = solve(*solver, M, R, G, T, false, spec);
    for (index_t b = 0; b < 2; ++b) {
      EXPECT_FALSE(is_success(result.status[static_cast<std::size_t>(b)])) << "matrix " << b;
      for (int k = 0; k < nn; ++k)
        EXPECT_TRUE(std::isnan(result.grad.data()[b * nn + k])) << "matrix " << b << " entry " << k;
    }
    const auto alone = solve(*solver, M2, R2, G2, T, false, spec);
    EXPECT_EQ(result.status[2], alone.status[0]);
    EXPECT_TRUE(same_bits(result.grad.data() + 2 * nn, alone.grad.data(), nn));
  }
  // The exact gradient of that normal matrix is finite.
  EXPECT_TRUE(is_success(
      solve(*SolverRegistry::global().create("unrolled"), M2, R2, G2, T, false, spec).status[0]));
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
