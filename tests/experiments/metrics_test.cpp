// Error metrics against hand-computed values; NaN gradients left out and counted.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "experiments/study/metrics.hpp"

namespace sinkgrad::study {
namespace {

TEST(Metrics, SeedsMetricsAndFrobenius) {
  // Two 2x2 matrices. Matrix 0 is off by 0.1 in one entry, matrix 1 is exact.
  HostBatch<double> reference(2, 2), gradient(2, 2);
  const double ref[8] = {1, -2, 0.5, 2, 3, 4, -1, 1};
  for (int k = 0; k < 8; ++k) reference.data()[k] = gradient.data()[k] = ref[k];
  gradient(0, 0, 1) = -2.1;
  const ErrorMetrics m = compare_gradients<double>(gradient.view(), reference.view());
  EXPECT_EQ(m.measured, 2);
  EXPECT_NEAR(m.max_abs, 0.1, 1e-15);
  EXPECT_NEAR(m.mean_abs, 0.1 / 8, 1e-15);
  EXPECT_NEAR(m.max_rel, 0.1 / (2 + 1e-12), 1e-12);
  EXPECT_NEAR(m.mean_rel, 0.05 / 8, 1e-12);
  const double frobenius0 = 0.1 / std::sqrt(1 + 4 + 0.25 + 4);
  ASSERT_EQ(m.frobenius.size(), 2u);
  EXPECT_NEAR(m.frobenius[0], frobenius0, 1e-15);
  EXPECT_EQ(m.frobenius[1], 0.0);
  EXPECT_NEAR(m.frobenius_median, frobenius0 / 2, 1e-15);
  EXPECT_NEAR(m.frobenius_p95, 0.95 * frobenius0, 1e-15);
  EXPECT_NEAR(m.frobenius_max, frobenius0, 1e-15);
}

TEST(Metrics, NonFiniteMatricesAreLeftOut) {
  HostBatch<float> gradient(3, 2, 1.0f);
  HostBatch<double> reference(3, 2, 1.0);
  gradient(1, 0, 0) = std::numeric_limits<float>::quiet_NaN();
  gradient(2, 1, 1) = 3.0f;
  const ErrorMetrics m = compare_gradients<float>(gradient.view(), reference.view());
  EXPECT_EQ(m.measured, 2);
  EXPECT_TRUE(std::isnan(m.frobenius[1]));
  EXPECT_EQ(m.max_abs, 2.0);
  EXPECT_EQ(m.frobenius_max, 1.0);  // sqrt(4 / 4)

  HostBatch<double> all_nan(1, 2, std::numeric_limits<double>::quiet_NaN());
  const ErrorMetrics none =
      compare_gradients<double>(all_nan.view(), HostBatch<double>(1, 2).view());
  EXPECT_EQ(none.measured, 0);
  EXPECT_TRUE(std::isnan(none.mean_abs));
  EXPECT_TRUE(std::isnan(none.frobenius_median));
}

TEST(Metrics, PercentileInterpolatesLikeNumpy) {
  EXPECT_EQ(percentile({3, 1, 2, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 0.95), 4.8);
  EXPECT_EQ(percentile({7}, 0.95), 7);
  EXPECT_EQ(median({1, std::nan(""), 3}), 2);
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_EQ(finite_max({1, std::nan(""), 5, 2}), 5);
}

}  // namespace
}  // namespace sinkgrad::study
