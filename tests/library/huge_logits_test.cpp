// Finite logits of any magnitude, up to the largest the type holds: every convention's R is
// finite, in [0, 1], its last axis normalised and its reported violation that of the other axis.
// At such scales the potentials are rounded by far more than 1 (|M| eps), so R must not be formed
// as exp(M + f + g); and R itself is then decided by offsets below that rounding (the forward is
// ill-conditioned there), so it is compared with a reference only where |M| eps is small: the
// first scale, which the linear domain cannot take either, against a long double log-domain
// forward written here (columns_first and rows_first without eps), to 2 |M| eps.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/forward_spec.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
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

template <class Real>
class HugeLogits : public ::testing::Test {};
using Reals = ::testing::Types<float, double>;
TYPED_TEST_SUITE(HugeLogits, Reals);

TYPED_TEST(HugeLogits, EveryConventionGivesAFiniteNormalisedR) {
  using Real = TypeParam;
  auto rng = make_rng(sizeof(Real) * 1009);
  const double eps = std::numeric_limits<Real>::epsilon();
  const std::vector<double> scales = sizeof(Real) == 4
                                         ? std::vector<double>{1e2, 1e10, 1e20, 1e37}
                                         : std::vector<double>{1e5, 1e20, 1e100, 1e300};
  const std::vector<std::pair<std::string, double>> cases = {
      {"columns_first", 0.0}, {"columns_first", 1e-3}, {"rows_first", 0.0}, {"rows_first", 1e-3},
      {"tilekernels", 1e-6},  {"megatron_main", 1e-6}, {"magi2", 0.0},      {"mhc_triton", 1e-8}};
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

}  // namespace
}  // namespace sinkgrad::testing
