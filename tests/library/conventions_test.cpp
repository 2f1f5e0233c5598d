// Forward conventions (core/forward_spec.hpp): every convention's R against the direct
// float64-and-better implementation of its formula (tests/support/convention_reference.hpp),
// unrolled against that reference's tape reverse mode and against finite differences, the
// default unchanged, poisoned matrices isolated, the implicit solvers on the exact side, and
// bad specs refused.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/support/convention_reference.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

struct ConventionCase {
  std::string convention;
  double eps;
};

// Every convention, with and without an eps (the defaults: 0, 0, 1e-6).
std::vector<ConventionCase> convention_cases() {
  return {{"columns_first", 0.0}, {"columns_first", 1e-3}, {"rows_first", 0.0},
          {"rows_first", 1e-3},   {"tilekernels", 1e-6},   {"tilekernels", 1e-2},
          {"tilekernels", 0.0}};
}

HostBatch<double> run_forward(const HostBatch<double>& M, int T, const ForwardSpec& spec,
                              std::vector<double>* violation = nullptr) {
  HostBatch<double> R(M.batch(), M.n());
  if (violation != nullptr) violation->assign(static_cast<size_t>(M.batch()), -1.0);
  sinkhorn_forward<double>(M.view(), T, R.view(),
                           violation != nullptr ? violation->data() : nullptr, Device::cpu, spec);
  return R;
}

double max_abs_difference(const double* a, const Square& b, int count) {
  double worst = 0;
  for (int k = 0; k < count; ++k)
    worst = std::max(worst, static_cast<double>(std::fabs(Wide(a[k]) - b[k])));
  return worst;
}

TEST(Conventions, ForwardMatchesTheFormulaOfEachConvention) {
  auto rng = make_rng(1601);
  for (const auto& c : convention_cases())
    for (int n : {1, 2, 3, 4, 7, 8, 16, 32, 64})
      for (int T : {1, 3, 20}) {
        SCOPED_TRACE(c.convention + " eps " + std::to_string(c.eps) + " n " + std::to_string(n) +
                     " T " + std::to_string(T));
        const auto spec = make_forward_spec(c.convention, c.eps);
        const auto M = normal_batch<double>(rng, 2, n, 2.0);  // T = 1, 3: far from converged
        std::vector<double> violation;
        const auto R = run_forward(M, T, spec, &violation);
        const int nn = n * n;
        for (index_t b = 0; b < M.batch(); ++b) {
          const Square ref =
              convention_forward_reference(widen(M.data() + b * nn, n), n, T, c.convention, c.eps);
          EXPECT_LT(max_abs_difference(R.data() + b * nn, ref, nn), 1e-14);
          // The violation reported is that of the axis the last step leaves inexact.
          const bool columns = c.convention == "columns_first";
          Wide worst = 0;
          for (int a = 0; a < n; ++a) {
            Wide sum = 0;
            for (int k = 0; k < n; ++k) sum += columns ? ref[k * n + a] : ref[a * n + k];
            worst = std::max(worst, std::fabs(sum - 1));
          }
          EXPECT_NEAR(violation[b], static_cast<double>(worst), 1e-14);
        }
      }
}

// An eps is added to sums of exp(M) as written: shifting M changes R (unlike eps = 0), and
// logits far beyond exp's range are handled exactly (the shift is compensated, not dropped).
TEST(Conventions, EpsSeesTheScaleOfExpM) {
  auto rng = make_rng(1602);
  const int n = 5, T = 3;
  const auto M = normal_batch<double>(rng, 1, n, 1.0);
  HostBatch<double> shifted = M;
  for (index_t k = 0; k < shifted.size(); ++k) shifted.data()[k] -= 12.0;
  for (const std::string name : {"columns_first", "rows_first"}) {
    const auto spec = make_forward_spec(name, 1e-4);
    const auto R = run_forward(shifted, T, spec);
    const auto ref = convention_forward_reference(widen(shifted.data(), n), n, T, name, 1e-4);
    EXPECT_LT(max_abs_difference(R.data(), ref, n * n), 1e-14);
    const auto R0 = run_forward(M, T, spec);
    double change = 0;
    for (index_t k = 0; k < R.size(); ++k)
      change = std::max(change, std::fabs(R.data()[k] - R0.data()[k]));
    EXPECT_GT(change, 1e-8) << name;  // far above the 1e-14 agreement with the formula
    // Logits of 1000 overflow exp in float64; the log domain keeps R finite and rows/columns
    // normalised up to eps.
    HostBatch<double> huge = M;
    for (index_t k = 0; k < huge.size(); ++k) huge.data()[k] *= 1000.0;
    const auto Rh = run_forward(huge, T, spec);
    for (index_t k = 0; k < Rh.size(); ++k) EXPECT_TRUE(std::isfinite(Rh.data()[k]));
  }
}

TEST(Conventions, DefaultSpecIsBitForBitTheSeedsForward) {
  auto rng = make_rng(1603);
  for (int n : {3, 8, 70}) {
    const auto M = normal_batch<double>(rng, 4, n, 3.0);
    const auto before = forward(M, 20);
    const auto after = run_forward(M, 20, ForwardSpec{});
    for (index_t k = 0; k < M.size(); ++k) ASSERT_EQ(before.data()[k], after.data()[k]);
    const auto Mf = convert<float>(M);
    HostBatch<float> Rf(Mf.batch(), n), Rf2(Mf.batch(), n);
    sinkhorn_forward<float>(Mf.view(), 20, Rf.view(), nullptr);
    sinkhorn_forward<float>(Mf.view(), 20, Rf2.view(), nullptr, Device::cpu, ForwardSpec{});
    for (index_t k = 0; k < Mf.size(); ++k) ASSERT_EQ(Rf.data()[k], Rf2.data()[k]);
  }
}

TEST(Conventions, UnrolledIsTheExactDerivativeOfEachConvention) {
  auto rng = make_rng(1604);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  for (const auto& c : convention_cases())
    for (int n : {1, 2, 3, 4, 7, 8, 16, 32, 64})
      for (int T : {1, 3, 20}) {
        SCOPED_TRACE(c.convention + " eps " + std::to_string(c.eps) + " n " + std::to_string(n) +
                     " T " + std::to_string(T));
        const auto spec = make_forward_spec(c.convention, c.eps);
        const auto M = normal_batch<double>(rng, 2, n, 2.0);
        const auto G = normal_batch<double>(rng, 2, n, 1.0);
        const auto R = run_forward(M, T, spec);
        const auto sol = solve(*solver, M, R, G, T, false, spec);
        const int nn = n * n;
        for (index_t b = 0; b < M.batch(); ++b) {
          ASSERT_EQ(sol.status[b], SolveStatus::ok);
          const Square ref = convention_unrolled_reference(
              widen(M.data() + b * nn, n), widen(G.data() + b * nn, n), n, T, c.convention, c.eps);
          const double* grad = sol.grad.data() + b * nn;
          Wide norm = 0;
          for (int k = 0; k < nn; ++k) norm = std::max(norm, std::fabs(ref[k]));
          // n = 1: the gradient is 0 for eps = 0 and of order eps otherwise.
          EXPECT_LE(max_abs_difference(grad, ref, nn), 1e-10 * static_cast<double>(norm) + 1e-15);
        }
      }
}

// The tape reference itself against central differences of the library's forward.
TEST(Conventions, ReferenceGradientMatchesFiniteDifferences) {
  auto rng = make_rng(1605);
  const int n = 4, T = 3;
  const double h = 1e-4;
  for (const auto& c : convention_cases()) {
    SCOPED_TRACE(c.convention + " eps " + std::to_string(c.eps));
    const auto spec = make_forward_spec(c.convention, c.eps);
    const auto M = normal_batch<double>(rng, 1, n, 1.0);
    const auto G = normal_batch<double>(rng, 1, n, 1.0);
    const Square ref = convention_unrolled_reference(widen(M.data(), n), widen(G.data(), n), n, T,
                                                     c.convention, c.eps);
    for (int e = 0; e < n * n; ++e) {
      HostBatch<double> plus = M, minus = M;
      plus.data()[e] += h;
      minus.data()[e] -= h;
      const auto Rp = run_forward(plus, T, spec), Rm = run_forward(minus, T, spec);
      Wide difference = 0;
      for (int k = 0; k < n * n; ++k)
        difference += Wide(G.data()[k]) * (Rp.data()[k] - Rm.data()[k]);
      EXPECT_NEAR(static_cast<double>(difference / (2 * h)), static_cast<double>(ref[e]), 1e-7);
    }
  }
}

// rows_first(M) is columns_first(M^T)^T, so every solver's gradient for rows_first equals the
// transposed gradient of the transposed problem under columns_first. For the plain systems
// (a CG iterate stopped at max_iterations, a pseudo-inverse) the result depends on which side
// is eliminated, so this holds only when they take rows_first's exact side (its columns).
// They are compared far from convergence (T = 1): near it their near-null eigenvalue
// (docs/math.md) amplifies the rounding difference between the two forwards' R without bound.
TEST(Conventions, RowsFirstIsTheTransposedColumnsFirstForEverySolver) {
  auto rng = make_rng(1606);
  for (int n : {3, 8, 16})
    for (int T : {1, 4}) {
      const auto M = normal_batch<double>(rng, 3, n, 1.5);
      const auto G = normal_batch<double>(rng, 3, n, 1.0);
      HostBatch<double> Mt(3, n), Gt(3, n);
      for (index_t b = 0; b < 3; ++b)
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) {
            Mt(b, j, i) = M(b, i, j);
            Gt(b, j, i) = G(b, i, j);
          }
      const ForwardSpec rows{ForwardConvention::rows_first, 0.0};
      const auto R = run_forward(M, T, rows);
      const auto Rt = forward(Mt, T);
      auto configs = all_solver_configs();
      // Two CG steps: an iterate that depends on which side the Schur form eliminates.
      configs.push_back({"cg_plain", {{"system", "schur"}, {"max_iterations", "2"}}});
      for (const auto& config : configs) {
        const bool plain = config.options.count("max_iterations") == 0 &&
                           (config.name == "cg_plain" || config.label() == "direct system=plain");
        if (plain && T != 1) continue;
        SCOPED_TRACE(config.label() + " n " + std::to_string(n) + " T " + std::to_string(T));
        const auto solver = config.create();
        const auto a = solve(*solver, M, R, G, T, false, rows);
        const auto b = solve(*solver, Mt, Rt, Gt, T);
        for (index_t m = 0; m < 3; ++m) {
          ASSERT_EQ(a.status[m], b.status[m]);
          double worst = 0, norm = 0;
          for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
              worst = std::max(worst, std::fabs(a.grad(m, i, j) - b.grad(m, j, i)));
              norm = std::max(norm, std::fabs(b.grad(m, j, i)));
            }
          EXPECT_LE(worst, 1e-9 * norm);
        }
      }
    }
}

// rows_first without eps runs the default team forms on the transposed matrices, and the plain
// CG on the exact side reads R and G transposed in place (core/forward_spec.hpp,
// math::CpuMatrices<Real, true>): the same numbers in the same order as the default run on
// explicitly transposed batches, so the same bits, poisoned matrices included. (The CUDA team
// kernels do the same on transposed tiles: tests/cuda/transposed_tiles_test.cpp.)
template <class Real>
void expect_same_bits(const HostBatch<Real>& a, const HostBatch<Real>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (index_t k = 0; k < a.size(); ++k)
    ASSERT_EQ(std::memcmp(&a.data()[k], &b.data()[k], sizeof(Real)), 0) << "entry " << k;
}

template <class Real>
void check_transposed_default(int n, int T) {
  SCOPED_TRACE("n " + std::to_string(n) + " T " + std::to_string(T) + " " +
               (sizeof(Real) == 8 ? "f64" : "f32"));
  auto rng = make_rng(static_cast<std::uint64_t>(1610 + 31 * n + T));
  auto M = convert<Real>(normal_batch<double>(rng, 5, n, 2.0));
  auto G = convert<Real>(normal_batch<double>(rng, 5, n, 1.0));
  M(1, 0, n - 1) = std::numeric_limits<Real>::quiet_NaN();
  G(3, n - 1, 0) = std::numeric_limits<Real>::infinity();
  const auto Mt = transposed(M), Gt = transposed(G);
  const ForwardSpec rows{ForwardConvention::rows_first, 0.0};
  HostBatch<Real> R(5, n), Rt(5, n);
  std::vector<Real> v(5), vt(5);
  EXPECT_EQ(sinkhorn_forward<Real>(M.view(), T, R.view(), v.data(), Device::cpu, rows), 1);
  EXPECT_EQ(sinkhorn_forward<Real>(Mt.view(), T, Rt.view(), vt.data(), Device::cpu), 1);
  expect_same_bits(R, transposed(Rt));
  for (int b = 0; b < 5; ++b) ASSERT_EQ(std::memcmp(&v[b], &vt[b], sizeof(Real)), 0) << b;

  // tilekernels leaves the same side exact; without eps its gradient is not carried to M
  // (core/log_base_chain.hpp), so the solve is the default's on the transposed matrices.
  const ForwardSpec tilekernels{ForwardConvention::tilekernels, 0.0};
  for (const auto& config :
       {SolverConfig{"unrolled", {}}, SolverConfig{"cg_plain", {{"system", "schur"}}},
        SolverConfig{"cg_plain", {{"system", "block"}}}}) {
    // unrolled replays the forward: only rows_first without eps is the transposed default.
    for (const ForwardSpec& spec : {rows, tilekernels}) {
      if (config.name == "unrolled" && !is_transposed_default_forward(spec)) continue;
      SCOPED_TRACE(config.label() + " " + describe(spec));
      const auto solver = config.create();
      const auto a = solve(*solver, M, R, G, T, true, spec);
      const auto b = solve(*solver, Mt, Rt, Gt, T, true);
      EXPECT_EQ(a.status, b.status);
      EXPECT_EQ(a.iterations, b.iterations);
      EXPECT_EQ(a.status[1], SolveStatus::invalid_input);
      EXPECT_EQ(a.status[3], SolveStatus::invalid_input);
      expect_same_bits(a.grad, transposed(b.grad));
      ASSERT_EQ(a.history.size(), b.history.size());
      for (std::size_t k = 0; k < a.history.size(); ++k)
        ASSERT_EQ(std::memcmp(&a.history[k], &b.history[k], sizeof(Real)), 0) << k;
    }
  }
}

TEST(Conventions, RowsFirstWithoutEpsIsTheDefaultOnTheTransposedMatricesBitForBit) {
  for (int n : {1, 2, 3, 4, 7, 8, 16, 32, 64})
    for (int T : {1, 3, 20}) {
      check_transposed_default<float>(n, T);
      check_transposed_default<double>(n, T);
    }
}

// A NaN in one matrix's logits: that matrix alone is reported, its neighbours are the bits of
// their solo runs, for the forward and every solver, under every convention.
TEST(Conventions, PoisonedMatrixIsIsolated) {
  auto rng = make_rng(1607);
  const int n = 6, T = 3;
  for (const auto& c : convention_cases()) {
    SCOPED_TRACE(c.convention + " eps " + std::to_string(c.eps));
    const auto spec = make_forward_spec(c.convention, c.eps);
    auto M = normal_batch<double>(rng, 3, n, 1.0);
    const auto G = normal_batch<double>(rng, 3, n, 1.0);
    M(1, 2, 3) = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> violation;
    const auto R = run_forward(M, T, spec, &violation);
    EXPECT_TRUE(std::isnan(violation[1]));
    EXPECT_TRUE(std::isnan(R(1, 0, 0)));
    for (index_t b : {0, 2}) {
      const auto solo = run_forward(single(M, b), T, spec);
      for (int k = 0; k < n * n; ++k) ASSERT_EQ(R.data()[b * n * n + k], solo.data()[k]);
    }
    for (const auto& config : all_solver_configs()) {
      SCOPED_TRACE(config.label());
      const auto solver = config.create();
      const auto sol = solve(*solver, M, R, G, T, false, spec);
      EXPECT_EQ(sol.status[1], SolveStatus::invalid_input);
      EXPECT_TRUE(std::isnan(sol.grad(1, 0, 0)));
      for (index_t b : {0, 2}) {
        const auto solo = solve(*solver, single(M, b), single(R, b), single(G, b), T, false, spec);
        EXPECT_EQ(sol.status[b], solo.status[0]);
        for (int k = 0; k < n * n; ++k)
          ASSERT_EQ(sol.grad.data()[b * n * n + k], solo.grad.data()[k]);
      }
    }
  }
}

TEST(Conventions, BadSpecsAreRefused) {
  try {
    make_forward_spec("sinkhorn_knopp");
    FAIL() << "an unknown convention was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("columns_first, rows_first, tilekernels, megatron_main, "
                                         "magi2, mhc_triton, maxtext, megatron_dev"),
              std::string::npos)
        << e.what();
  }
  for (double eps :
       {-1e-9, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    for (const std::string name : {"columns_first", "rows_first", "tilekernels", "megatron_main",
                                   "magi2", "mhc_triton", "maxtext"}) {
      EXPECT_THROW(make_forward_spec(name, eps), Error) << name << " " << eps;
    }
  EXPECT_EQ(make_forward_spec("tilekernels").eps, 1e-6);
  EXPECT_EQ(make_forward_spec("rows_first").eps, 0.0);
  // The library calls check the spec too.
  auto rng = make_rng(1608);
  const auto M = normal_batch<double>(rng, 1, 3, 1.0);
  const ForwardSpec bad{ForwardConvention::rows_first, -1.0};
  EXPECT_THROW(run_forward(M, 2, bad), Error);
  const auto solver = SolverConfig{"cg_corrected", {}}.create();
  const auto R = forward(M, 2);
  EXPECT_THROW(solve(*solver, M, R, M, 2, false, bad), Error);
}

}  // namespace
}  // namespace sinkgrad::testing
