#include "experiments/study/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sinkgrad::study {
namespace {

// The seeds' guard in the relative error: |g - ref| / (|ref| + 1e-12).
constexpr double relative_guard = 1e-12;

template <class Real>
bool finite_matrix(const Real* g, index_t size) {
  for (index_t k = 0; k < size; ++k)
    if (!std::isfinite(static_cast<double>(g[k]))) return false;
  return true;
}

template <class Real>
double frobenius_error(const Real* g, const double* ref, index_t size) {
  double difference = 0, norm = 0;
  for (index_t k = 0; k < size; ++k) {
    const double d = static_cast<double>(g[k]) - ref[k];
    difference += d * d;
    norm += ref[k] * ref[k];
  }
  // A zero reference (G = 0) makes any error infinite in relative terms; report the absolute.
  return norm > 0 ? std::sqrt(difference / norm) : std::sqrt(difference);
}

}  // namespace

double percentile(std::vector<double> values, double q) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
      values.end());
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const auto above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

double finite_max(const std::vector<double>& values) {
  double best = std::numeric_limits<double>::quiet_NaN();
  for (const double v : values)
    if (std::isfinite(v) && !(v <= best)) best = v;
  return best;
}

template <class Real>
double matrix_frobenius_error(const Real* gradient, const double* reference, index_t size) {
  return finite_matrix(gradient, size) ? frobenius_error(gradient, reference, size)
                                       : std::numeric_limits<double>::quiet_NaN();
}

template <class Real>
std::vector<double> frobenius_errors(BatchView<const Real> gradient,
                                     BatchView<const double> reference) {
  std::vector<double> errors(static_cast<std::size_t>(gradient.batch));
  const index_t size = gradient.matrix_size();
  for (index_t b = 0; b < gradient.batch; ++b)
    errors[static_cast<std::size_t>(b)] =
        matrix_frobenius_error(gradient.matrix(b), reference.matrix(b), size);
  return errors;
}

template <class Real>
ErrorMetrics compare_gradients(BatchView<const Real> gradient, BatchView<const double> reference) {
  ErrorMetrics m;
  m.frobenius = frobenius_errors(gradient, reference);
  const index_t size = gradient.matrix_size();
  double sum_abs = 0, sum_rel = 0;
  for (index_t b = 0; b < gradient.batch; ++b) {
    if (!std::isfinite(m.frobenius[static_cast<std::size_t>(b)])) continue;
    ++m.measured;
    const Real* g = gradient.matrix(b);
    const double* ref = reference.matrix(b);
    for (index_t k = 0; k < size; ++k) {
      const double abs = std::abs(static_cast<double>(g[k]) - ref[k]);
      const double rel = abs / (std::abs(ref[k]) + relative_guard);
      sum_abs += abs;
      sum_rel += rel;
      m.max_abs = std::max(m.max_abs, abs);
      m.max_rel = std::max(m.max_rel, rel);
    }
  }
  const double entries = static_cast<double>(m.measured * size);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.mean_abs = m.measured > 0 ? sum_abs / entries : nan;
  m.mean_rel = m.measured > 0 ? sum_rel / entries : nan;
  if (m.measured == 0) m.max_abs = m.max_rel = nan;
  m.frobenius_median = percentile(m.frobenius, 0.5);
  m.frobenius_p95 = percentile(m.frobenius, 0.95);
  m.frobenius_max = finite_max(m.frobenius);
  return m;
}

template ErrorMetrics compare_gradients(BatchView<const float>, BatchView<const double>);
template ErrorMetrics compare_gradients(BatchView<const double>, BatchView<const double>);
template double matrix_frobenius_error(const float*, const double*, index_t);
template double matrix_frobenius_error(const double*, const double*, index_t);
template std::vector<double> frobenius_errors(BatchView<const float>, BatchView<const double>);
template std::vector<double> frobenius_errors(BatchView<const double>, BatchView<const double>);

}  // namespace sinkgrad::study
