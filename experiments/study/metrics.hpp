#pragma once
// How far a batch of gradients is from a reference: the seeds' four numbers over every entry
// (mean and max of |g - ref|, mean and max of |g - ref| / (|ref| + 1e-12)), and the per-matrix
// relative Frobenius error ||g - ref||_F / ||ref||_F summarised by median, 95th percentile and
// max. Matrices whose gradient is not finite (a failed solve writes NaN) are left out of every
// number and counted instead.

#include <vector>

#include "core/batch.hpp"

namespace sinkgrad::study {

struct ErrorMetrics {
  double mean_abs = 0;
  double max_abs = 0;
  double mean_rel = 0;
  double max_rel = 0;
  double frobenius_median = 0;
  double frobenius_p95 = 0;
  double frobenius_max = 0;
  index_t measured = 0;           // matrices with a finite gradient
  std::vector<double> frobenius;  // per matrix (NaN where left out)
};

template <class Real>
ErrorMetrics compare_gradients(BatchView<const Real> gradient, BatchView<const double> reference);

// One matrix's relative Frobenius error (NaN for a non-finite gradient); size = n * n.
template <class Real>
double matrix_frobenius_error(const Real* gradient, const double* reference, index_t size);

// Per-matrix relative Frobenius errors only (NaN for a non-finite gradient).
template <class Real>
std::vector<double> frobenius_errors(BatchView<const Real> gradient,
                                     BatchView<const double> reference);

// Order statistics of the finite values (NaN when there are none). percentile interpolates
// linearly between order statistics (numpy's default), q in [0, 1].
double percentile(std::vector<double> values, double q);
inline double median(std::vector<double> values) {
  return percentile(std::move(values), 0.5);
}
double finite_max(const std::vector<double>& values);

}  // namespace sinkgrad::study
