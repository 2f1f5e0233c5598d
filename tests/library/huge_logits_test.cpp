// Finite logits of any magnitude, up to the largest the type holds: every convention's R is
// finite, in [0, 1], its last axis normalised and its reported violation that of the other axis.
// At such scales the potentials are rounded by far more than 1 (|M| eps), so R must not be formed
// as exp(M + f + g); and R itself is then decided by offsets below that rounding (the forward is
// ill-conditioned there), so it is compared with a reference only where |M| eps is small: the
// first scale, which the linear domain cannot take either, against a long double log-domain
// forward written here (columns_first and rows_first without eps), to 2 |M| eps.
// The same holds for the exact derivative of that forward (`unrolled`, and `auto` whose fallback
// it is): finite and `ok` at every scale, where its log-domain replay forms each iterate's
// entries again from the potentials, and equal to a long double reverse-mode derivative of the
// reference forward where |M| eps is small.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/forward_spec.hpp"
#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"
#include "tests/support/wide.hpp"

namespace sinkgrad::testing {
namespace {

// -logsumexp_k(x(k)) in long double.
template <class X>
Wide minus_logsumexp(int n, const X& x) {
  Wide top = x(0);
  for (int k = 1; k < n; ++k) top = std::max(top, x(k));
  Wide sum = 0;
  for (int k = 0; k < n; ++k) sum += std::exp(x(k) - top);
  return -(top + std::log(sum));
}

// The T-step forward in potentials, columns then rows (rows_first: on M^T, transposed back),
// ending with the softmax of each row of M + 1 g^T.
Square log_domain_reference(const Square& M_in, int n, int T, bool rows_first) {
  Square M = M_in;
  if (rows_first)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) M[i * n + j] = M_in[j * n + i];
  std::vector<Wide> f(n, 0), g(n, 0);
  for (int t = 0; t < T; ++t) {
    for (int j = 0; j < n; ++j)
      g[j] = minus_logsumexp(n, [&](int i) { return M[i * n + j] + f[i]; });
    if (t + 1 < T)
      for (int i = 0; i < n; ++i)
        f[i] = minus_logsumexp(n, [&](int j) { return M[i * n + j] + g[j]; });
  }
  // The last row step on exp(M + 1 g^T), which row scaling leaves unchanged: each row shifted
  // by its largest entry, then divided by its sum.
  Square R(M.size());
  for (int i = 0; i < n; ++i) {
    Wide top = M[i * n] + g[0], sum = 0;
    for (int j = 1; j < n; ++j) top = std::max(top, M[i * n + j] + g[j]);
    for (int j = 0; j < n; ++j) sum += std::exp(M[i * n + j] + g[j] - top);
    for (int j = 0; j < n; ++j)
      R[rows_first ? j * n + i : i * n + j] = std::exp(M[i * n + j] + g[j] - top) / sum;
  }
  return R;
}

// dL/dM of log_domain_reference for L = sum G ⊙ R, by reverse mode over its potentials: the
// last row softmax, then each potential's logsumexp in turn (d(-lse_k x_k) / dx_k = -softmax_k),
// with no adjoint of the iterates themselves (the library's replay carries W = X ⊙ dL/dX).
Square log_domain_reference_gradient(const Square& M_in, const Square& G_in, int n, int T,
                                     bool rows_first) {
  const auto at = [&](const Square& A, int i, int j) {
    return rows_first ? A[j * n + i] : A[i * n + j];
  };
  Square M(M_in.size()), G(G_in.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      M[i * n + j] = at(M_in, i, j);
      G[i * n + j] = at(G_in, i, j);
    }
  // f[t], g[t]: the potentials after step t (f[0] = 0; f[T] is never formed).
  std::vector<std::vector<Wide>> f(T + 1, std::vector<Wide>(n, 0)), g = f;
  for (int t = 1; t <= T; ++t) {
    for (int j = 0; j < n; ++j)
      g[t][j] = minus_logsumexp(n, [&](int i) { return M[i * n + j] + f[t - 1][i]; });
    if (t < T)
      for (int i = 0; i < n; ++i)
        f[t][i] = minus_logsumexp(n, [&](int j) { return M[i * n + j] + g[t][j]; });
  }
  // softmax_k(x(k)) for k < n, shifted by the largest.
  const auto softmax = [n](auto x) {
    std::vector<Wide> p(n);
    Wide top = x(0), sum = 0;
    for (int k = 1; k < n; ++k) top = std::max(top, x(k));
    for (int k = 0; k < n; ++k) sum += p[k] = std::exp(x(k) - top);
    for (int k = 0; k < n; ++k) p[k] /= sum;
    return p;
  };
  Square dM(M.size(), 0);
  std::vector<Wide> dg(n, 0), df(n, 0);
  for (int i = 0; i < n; ++i) {  // R_i = softmax(M_i + g[T])
    const auto r = softmax([&](int j) { return M[i * n + j] + g[T][j]; });
    Wide rg = 0;
    for (int j = 0; j < n; ++j) rg += r[j] * G[i * n + j];
    for (int j = 0; j < n; ++j) {
      const Wide dz = r[j] * (G[i * n + j] - rg);
      dM[i * n + j] += dz;
      dg[j] += dz;
    }
  }
  for (int t = T; t >= 1; --t) {
    std::fill(df.begin(), df.end(), Wide(0));
    for (int j = 0; j < n; ++j) {  // g[t]_j = -lse_i(M_ij + f[t-1]_i)
      const auto y = softmax([&](int i) { return M[i * n + j] + f[t - 1][i]; });
      for (int i = 0; i < n; ++i) {
        dM[i * n + j] -= dg[j] * y[i];
        df[i] -= dg[j] * y[i];
      }
    }
    if (t == 1) break;  // f[0] = 0
    std::fill(dg.begin(), dg.end(), Wide(0));
    for (int i = 0; i < n; ++i) {  // f[t-1]_i = -lse_j(M_ij + g[t-1]_j)
      const auto x = softmax([&](int j) { return M[i * n + j] + g[t - 1][j]; });
      for (int j = 0; j < n; ++j) {
        dM[i * n + j] -= df[i] * x[j];
        dg[j] -= df[i] * x[j];
      }
    }
  }
  Square out(dM.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) out[rows_first ? j * n + i : i * n + j] = dM[i * n + j];
  return out;
}

// The scales of both tests: the first one the linear domain cannot take, where the results are
// compared with the references; the others past |M| eps = 1, up to the largest the type holds.
template <class Real>
std::vector<double> huge_scales() {
  return sizeof(Real) == 4 ? std::vector<double>{1e2, 1e10, 1e20, 1e37}
                           : std::vector<double>{1e5, 1e20, 1e100, 1e300};
}

// Every convention with its eps, and the two that have one also without.
std::vector<std::pair<std::string, double>> huge_cases() {
  return {{"columns_first", 0.0}, {"columns_first", 1e-3}, {"rows_first", 0.0},
          {"rows_first", 1e-3},   {"tilekernels", 1e-6},   {"megatron_main", 1e-6},
          {"magi2", 0.0},         {"mhc_triton", 1e-8}};
}

template <class Real>
class HugeLogits : public ::testing::Test {};
using Reals = ::testing::Types<float, double>;
TYPED_TEST_SUITE(HugeLogits, Reals);

TYPED_TEST(HugeLogits, EveryConventionGivesAFiniteNormalisedR) {
  using Real = TypeParam;
  auto rng = make_rng(sizeof(Real) * 1009);
  const double eps = std::numeric_limits<Real>::epsilon();
  const std::vector<double> scales = huge_scales<Real>();
  const auto cases = huge_cases();
  int compared = 0;
  for (const auto& [convention, convention_eps] : cases)
    for (double scale : scales)
      for (int n : {2, 4, 8, 33, 65})
        for (int T : {1, 3, 20}) {
          SCOPED_TRACE(convention + " eps " + std::to_string(convention_eps) + " scale " +
                       std::to_string(scale) + " n " + std::to_string(n) + " T " +
                       std::to_string(T));
          const ForwardSpec spec = make_forward_spec(convention, convention_eps);
          // Scales near the largest float: N(0, 1) draws above 3.4 would overflow.
          const auto M = uniform_batch<Real>(rng, 24, n, -scale, scale);
          HostBatch<Real> R(M.batch(), n);
          std::vector<Real> violation(static_cast<std::size_t>(M.batch()), Real(-1));
          const index_t invalid =
              sinkhorn_forward<Real>(M.view(), T, R.view(), violation.data(), Device::cpu, spec);
          ASSERT_EQ(invalid, 0);
          const bool last_columns = spec.convention == ForwardConvention::rows_first ||
                                    spec.convention == ForwardConvention::tilekernels ||
                                    spec.convention == ForwardConvention::megatron_main ||
                                    spec.convention == ForwardConvention::mhc_triton;
          const int nn = n * n;
          for (index_t b = 0; b < M.batch(); ++b) {
            const Real* r = R.data() + b * nn;
            for (int k = 0; k < nn; ++k)
              ASSERT_TRUE(std::isfinite(r[k]) && r[k] >= 0 && r[k] <= 1)
                  << "matrix " << b << " entry " << k << ": " << r[k];
            ASSERT_TRUE(std::isfinite(violation[static_cast<std::size_t>(b)])) << "matrix " << b;
            Wide other_violation = 0;
            for (int a = 0; a < n; ++a) {
              Wide sum = 0, other = 0;
              for (int k = 0; k < n; ++k) {
                sum += last_columns ? r[k * n + a] : r[a * n + k];
                other += last_columns ? r[a * n + k] : r[k * n + a];
              }
              other_violation = std::max(other_violation, std::fabs(other - 1));
              // With eps the line sums to s / (s + eps) <= 1; without, to 1.
              ASSERT_LE(sum, 1 + 4 * n * eps) << "matrix " << b << " line " << a;
              if (convention_eps == 0.0) {
                ASSERT_GE(sum, 1 - 4 * n * eps) << "matrix " << b << " line " << a;
              }
            }
            ASSERT_NEAR(double(violation[static_cast<std::size_t>(b)]), double(other_violation),
                        4 * n * eps)
                << "matrix " << b;
            if (scale != scales[0] || convention_eps != 0.0 || convention == "magi2") continue;
            const Square ref =
                log_domain_reference(widen(M.data() + b * nn, n), n, T, last_columns);
            for (int k = 0; k < nn; ++k)
              ASSERT_NEAR(double(r[k]), double(ref[k]), 2 * scale * eps)
                  << "matrix " << b << " entry " << k;
            ++compared;
          }
        }
  EXPECT_GT(compared, 500);
}

// Past |M| eps = 1 the potentials are rounded by more than 1: an iterate's entry formed as
// exp(M + f + g) in the wrong order overflowed, and the replay's adjoint became inf - inf
// (`breakdown`, NaN) on about one matrix in ten. Every convention, both team forms and the
// one-matrix log-domain form (n = 4, 8 and the conventions without a team form), T = 1, 3, 20.
TYPED_TEST(HugeLogits, UnrolledAndAutoGiveAFiniteExactGradient) {
  using Real = TypeParam;
  auto rng = make_rng(sizeof(Real) * 2003);
  const double eps = std::numeric_limits<Real>::epsilon();
  const std::vector<double> scales = huge_scales<Real>();
  const auto cases = huge_cases();
  const auto unrolled = SolverRegistry::global().create("unrolled", {});
  const auto automatic = SolverRegistry::global().create("auto", {});
  int compared = 0;
  double worst = 0;
  for (const auto& [convention, convention_eps] : cases)
    for (double scale : scales)
      for (int n : {4, 8})
        for (int T : {1, 3, 20}) {
          SCOPED_TRACE(convention + " eps " + std::to_string(convention_eps) + " scale " +
                       std::to_string(scale) + " n " + std::to_string(n) + " T " +
                       std::to_string(T));
          const ForwardSpec spec = make_forward_spec(convention, convention_eps);
          const auto M = uniform_batch<Real>(rng, 24, n, -scale, scale);
          const auto G = normal_batch<Real>(rng, 24, n);
          HostBatch<Real> R(M.batch(), n);
          ASSERT_EQ(sinkhorn_forward<Real>(M.view(), T, R.view(), nullptr, Device::cpu, spec), 0);
          const auto exact = solve(*unrolled, M, R, G, T, false, spec);
          const auto safe = solve(*automatic, M, R, G, T, false, spec);
          const int nn = n * n;
          for (index_t b = 0; b < M.batch(); ++b) {
            const auto k_b = static_cast<std::size_t>(b);
            ASSERT_EQ(exact.status[k_b], SolveStatus::ok) << "unrolled, matrix " << b;
            ASSERT_TRUE(is_success(safe.status[k_b]))
                << "auto, matrix " << b << ": " << to_string(safe.status[k_b]);
            const Real* g = exact.grad.data() + b * nn;
            const Real* g_auto = safe.grad.data() + b * nn;
            for (int k = 0; k < nn; ++k) {
              ASSERT_TRUE(std::isfinite(g[k])) << "unrolled, matrix " << b << " entry " << k;
              ASSERT_TRUE(std::isfinite(g_auto[k])) << "auto, matrix " << b << " entry " << k;
            }
            if (scale != scales[0] || convention_eps != 0.0 || convention == "magi2") continue;
            const Square ref = log_domain_reference_gradient(
                widen(M.data() + b * nn, n), widen(G.data() + b * nn, n), n, T,
                spec.convention == ForwardConvention::rows_first);
            Wide g_max = 0;
            for (int k = 0; k < nn; ++k)
              g_max = std::max(g_max, std::fabs(Wide(G.data()[b * nn + k])));
            for (int k = 0; k < nn; ++k) {
              const double error = double(std::fabs(Wide(g[k]) - ref[k]) / g_max);
              worst = std::max(worst, error / (scale * eps));
              ASSERT_LE(error, 4 * n * scale * eps) << "matrix " << b << " entry " << k;
            }
            ++compared;
          }
        }
  EXPECT_GT(compared, 200);
  std::printf("worst error / (|M| eps max|G|): %.3g\n", worst);
}

}  // namespace
}  // namespace sinkgrad::testing
