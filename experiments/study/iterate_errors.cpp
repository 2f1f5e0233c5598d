#include "experiments/study/iterate_errors.hpp"

#include <limits>
#include <string>

#include "experiments/study/metrics.hpp"

namespace sinkgrad::study {

template <class Real>
IterateErrors<Real>::IterateErrors(int K, const HostBatch<double>& unrolled,
                                   const HostBatch<double>& converged)
    : K_(K),
      batch_(unrolled.view().batch),
      size_(unrolled.view().matrix_size()),
      unrolled_(unrolled),
      converged_(converged),
      vs_unrolled_(static_cast<std::size_t>(K) * static_cast<std::size_t>(batch_),
                   std::numeric_limits<double>::quiet_NaN()),
      vs_converged_(vs_unrolled_.size(), std::numeric_limits<double>::quiet_NaN()) {}

template <class Real>
void IterateErrors<Real>::gradient(index_t b, int k, const Real* g) {
  if (k < 1 || k > K_ || b < 0 || b >= batch_) return;
  vs_unrolled_[at(k, b)] = matrix_frobenius_error(g, unrolled_.view().matrix(b), size_);
  vs_converged_[at(k, b)] = matrix_frobenius_error(g, converged_.view().matrix(b), size_);
}

template <class Real>
void IterateErrors<Real>::summarise(BatchView<const Real> final_gradient,
                                    const std::int32_t* iterations, int used,
                                    RunRecord& record) const {
  const auto count = static_cast<std::size_t>(batch_);
  std::vector<double> final_unrolled(count), final_converged(count);
  for (index_t b = 0; b < batch_; ++b) {
    final_unrolled[static_cast<std::size_t>(b)] =
        matrix_frobenius_error(final_gradient.matrix(b), unrolled_.view().matrix(b), size_);
    final_converged[static_cast<std::size_t>(b)] =
        matrix_frobenius_error(final_gradient.matrix(b), converged_.view().matrix(b), size_);
  }
  std::vector<double> unrolled(count), converged(count);
  for (int k = 1; k <= std::min(used, K_); ++k) {
    for (index_t b = 0; b < batch_; ++b) {
      const auto i = static_cast<std::size_t>(b);
      const bool stopped = iterations[b] <= k;
      unrolled[i] = stopped ? final_unrolled[i] : vs_unrolled_[at(k, b)];
      converged[i] = stopped ? final_converged[i] : vs_converged_[at(k, b)];
    }
    record.iterate_error_unrolled_median.push_back(median(unrolled));
    record.iterate_error_converged_median.push_back(median(converged));
  }
}

template <class Real>
void iterate_errors_by_resolving(const SolverRegistry& registry, const RunSpec& run,
                                 const BackwardProblem<Real>& problem, int K,
                                 const HostBatch<double>& unrolled,
                                 const HostBatch<double>& converged, RunRecord& record) {
  const index_t batch = problem.grad_output.batch;
  const auto count = static_cast<std::size_t>(batch);
  HostBatch<Real> gradient(batch, problem.grad_output.n);
  std::vector<SolveStatus> status(count);
  std::vector<std::int32_t> iterations(count);
  for (int k = 1; k <= K; ++k) {
    auto options = run.options;
    options["max_iterations"] = std::to_string(k);
    const auto solver = registry.create(run.solver, options);
    solver->solve(problem, {gradient.view(), status.data(), iterations.data()}, run.device);
    record.iterate_error_unrolled_median.push_back(
        median(frobenius_errors<Real>(gradient.view(), unrolled.view())));
    record.iterate_error_converged_median.push_back(
        median(frobenius_errors<Real>(gradient.view(), converged.view())));
  }
}

template class IterateErrors<float>;
template class IterateErrors<double>;
template void iterate_errors_by_resolving(const SolverRegistry&, const RunSpec&,
                                          const BackwardProblem<float>&, int,
                                          const HostBatch<double>&, const HostBatch<double>&,
                                          RunRecord&);
template void iterate_errors_by_resolving(const SolverRegistry&, const RunSpec&,
                                          const BackwardProblem<double>&, int,
                                          const HostBatch<double>&, const HostBatch<double>&,
                                          RunRecord&);

}  // namespace sinkgrad::study
