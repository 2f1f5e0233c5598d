// The forward conventions with eps and tilekernels at the edges of their ranges, where the team
// form leaves its linear domain (forward/convention_team.hpp): logits spread or shifted far
// beyond exp's range, eps from 1e-300 to 1e12, against the long-double formulas of
// tests/support/convention_reference.hpp. Both the forward and the unrolled gradient, float64
// and float32, n across the team widths.

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "forward/sinkhorn_forward.hpp"
#include "tests/support/convention_reference.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

struct RangeCase {
  std::string convention;
  double eps;
  double scale;  // logits ~ N(shift, scale^2)
  double shift;
};

std::vector<RangeCase> range_cases() {
  std::vector<RangeCase> cases;
  for (const std::string name : {"columns_first", "rows_first", "tilekernels"})
    for (double eps : {1e-300, 1e-12, 1e-3, 10.0, 1e6, 1e12})
      for (const auto& [scale, shift] : std::vector<std::pair<double, double>>{
               {1.0, 0.0}, {1.0, -300.0}, {1.0, 300.0}, {20.0, 0.0}, {150.0, 0.0}})
        cases.push_back({name, eps, scale, shift});
  cases.push_back({"tilekernels", 0.0, 40.0, 0.0});  // softmax entries below float's range
  return cases;
}

template <class Real>
void check_range_case(const RangeCase& c, int n, int T, std::uint64_t seed) {
  std::ostringstream trace;
  trace << c.convention << " eps " << c.eps << " scale " << c.scale << " shift " << c.shift << " n "
        << n << " T " << T;
  SCOPED_TRACE(trace.str());
  auto rng = make_rng(seed);
  auto M = normal_batch<Real>(rng, 2, n, static_cast<Real>(c.scale));
  for (index_t k = 0; k < M.size(); ++k) M.data()[k] += static_cast<Real>(c.shift);
  const auto G = normal_batch<Real>(rng, 2, n, Real(1));
  const auto spec = make_forward_spec(c.convention, c.eps);
  HostBatch<Real> R(M.batch(), n);
  sinkhorn_forward<Real>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  const auto sol = solve(*solver, M, R, G, T, false, spec);
  // float32: the rounding of the logits' own magnitude (shift 300: 2e-5) reaches R and dL/dM.
  const bool single_precision = sizeof(Real) == 4;
  const double magnitude = std::fabs(c.shift) + 5 * c.scale;
  const double r_tol = single_precision ? 4e-6 * std::max(1.0, magnitude) : 1e-13 * magnitude;
  const int nn = n * n;
  for (index_t b = 0; b < M.batch(); ++b) {
    std::vector<double> m(nn), g(nn);
    for (int k = 0; k < nn; ++k) {
      m[k] = M.data()[b * nn + k];
      g[k] = G.data()[b * nn + k];
    }
    const Square ref_R =
        convention_forward_reference(widen(m.data(), n), n, T, c.convention, c.eps);
    for (int k = 0; k < nn; ++k)
      ASSERT_NEAR(R.data()[b * nn + k], static_cast<double>(ref_R[k]), std::max(r_tol, 1e-14))
          << "R entry " << k;
    ASSERT_EQ(sol.status[b], SolveStatus::ok);
    const Square ref_grad = convention_unrolled_reference(widen(m.data(), n), widen(g.data(), n), n,
                                                          T, c.convention, c.eps);
    Wide norm = 0;
    for (int k = 0; k < nn; ++k) norm = std::max(norm, std::fabs(ref_grad[k]));
    // The floor: logits of magnitude m are summed with potentials of that size, so every
    // entry carries an absolute rounding of about m ulp(1) (|R|, |G| <= 1-ish), n of them summed.
    const double unit = single_precision ? 6e-8 : 1.1e-16;
    const double g_tol =
        (single_precision ? 2e-3 : 1e-9) * std::max(1.0, magnitude) * static_cast<double>(norm) +
        2 * unit * std::max(1.0, magnitude) * n;
    for (int k = 0; k < nn; ++k)
      ASSERT_NEAR(sol.grad.data()[b * nn + k], static_cast<double>(ref_grad[k]), g_tol)
          << "gradient entry " << k;
  }
}

TEST(ConventionRanges, Float64ForwardAndUnrolledMatchTheFormulas) {
  std::uint64_t seed = 1700;
  for (const auto& c : range_cases())
    for (int n : {2, 5, 8, 16})
      for (int T : {1, 4, 30}) check_range_case<double>(c, n, T, ++seed);
}

TEST(ConventionRanges, Float32ForwardAndUnrolledMatchTheFormulas) {
  std::uint64_t seed = 1900;
  for (const auto& c : range_cases()) {
    if (c.eps < 1e-30) continue;  // below float's range: eps would round to 0
    for (int n : {3, 8})
      for (int T : {2, 20}) check_range_case<float>(c, n, T, ++seed);
  }
}

// TileKernels' unrolled takes S from P = S + eps where S >= eps and from exp(M - lse) below
// (softmax_back in solvers/unrolled/convention_unrolled_team.hpp). Each entry of the gradient,
// dM_js = S_js D_js, keeps its relative accuracy where S_js is far below eps: S from P - eps
// would keep only ulp(eps) / S_js of it (1e-2 at S_js = 1e-8, eps = 1e-3, float32).
TEST(ConventionRanges, Float32SoftmaxGradientEntriesBelowEpsKeepTheirDigits) {
  auto rng = make_rng(2100);
  const int n = 8;
  const int T = 20;
  const double eps = 1e-3;
  const auto M = normal_batch<float>(rng, 16, n, 6.0f);  // rows of S from 1 down to 1e-15
  const auto G = normal_batch<float>(rng, 16, n, 1.0f);
  const auto spec = make_forward_spec("tilekernels", eps);
  HostBatch<float> R(M.batch(), n);
  sinkhorn_forward<float>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  const auto sol = solve(*solver, M, R, G, T, false, spec);
  const int nn = n * n;
  int below_eps = 0;
  for (index_t b = 0; b < M.batch(); ++b) {
    ASSERT_EQ(sol.status[b], SolveStatus::ok);
    std::vector<double> m(nn), g(nn), S(nn);
    for (int k = 0; k < nn; ++k) {
      m[k] = M.data()[b * nn + k];
      g[k] = G.data()[b * nn + k];
    }
    for (int j = 0; j < n; ++j) {  // S = softmax of M's rows
      double top = m[j * n];
      for (int s = 0; s < n; ++s) top = std::max(top, m[j * n + s]);
      double sum = 0;
      for (int s = 0; s < n; ++s) sum += std::exp(m[j * n + s] - top);
      for (int s = 0; s < n; ++s) S[j * n + s] = std::exp(m[j * n + s] - top) / sum;
    }
    const Square ref = convention_unrolled_reference(widen(m.data(), n), widen(g.data(), n), n, T,
                                                     "tilekernels", eps);
    double D = 0;  // the largest |dM_js / S_js|
    for (int k = 0; k < nn; ++k) D = std::max(D, std::fabs(static_cast<double>(ref[k])) / S[k]);
    for (int k = 0; k < nn; ++k) {
      ASSERT_NEAR(sol.grad.data()[b * nn + k], static_cast<double>(ref[k]), 2e-4 * S[k] * D)
          << "matrix " << b << " entry " << k << " S " << S[k];
      if (S[k] < 1e-7) ++below_eps;
    }
  }
  EXPECT_GT(below_eps, 50);  // the entries the test is about are there
}

}  // namespace
}  // namespace sinkgrad::testing
