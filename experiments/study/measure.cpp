#include "experiments/study/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/study/gpu_timing.hpp"
#include "experiments/study/host_info.hpp"
#include "experiments/study/iterate_errors.hpp"
#include "experiments/study/metrics.hpp"
#include "experiments/study/solve_checked.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace sinkgrad::study {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Per-iteration residual norms of the batch: a matrix that stopped early keeps its last
// residual (the one of the iterate it returned), so every k summarises the whole batch.
void summarise_history(const std::vector<double>& history, index_t batch, int stride,
                       int iterations, RunRecord& record) {
  const int length = iterations + 1;
  std::vector<double> last(static_cast<std::size_t>(batch), std::nan(""));
  std::vector<double> first(static_cast<std::size_t>(batch), std::nan(""));
  std::vector<double> absolute(static_cast<std::size_t>(batch));
  std::vector<double> relative(static_cast<std::size_t>(batch));
  for (int k = 0; k < length; ++k) {
    for (index_t b = 0; b < batch; ++b) {
      const auto i = static_cast<std::size_t>(b);
      const double value =
          history[i * static_cast<std::size_t>(stride) + static_cast<std::size_t>(k)];
      if (std::isfinite(value)) last[i] = value;
      if (k == 0) first[i] = value;
      absolute[i] = last[i];
      relative[i] = first[i] > 0 ? last[i] / first[i] : (last[i] == 0 ? 0.0 : std::nan(""));
    }
    record.residual_median.push_back(median(absolute));
    record.residual_max.push_back(finite_max(absolute));
    record.relative_residual_median.push_back(median(relative));
    record.relative_residual_max.push_back(finite_max(relative));
  }
}

// The solve's per-matrix diagnostics (SolveDiagnostics), summarised over the batch.
template <class Real>
struct DiagnosticsBuffers {
  explicit DiagnosticsBuffers(std::size_t count)
      : row(count), column(count), residual(count), zeros(count) {}
  SolveDiagnostics<Real> view() {
    return {row.data(), column.data(), residual.data(), zeros.data()};
  }
  void summarise(RunRecord& record) const {
    const std::vector<double> row64(row.begin(), row.end()), column64(column.begin(), column.end());
    const std::vector<double> residual64(residual.begin(), residual.end());
    record.row_violation_max = finite_max(row64);
    record.row_violation_median = median(row64);
    record.column_violation_max = finite_max(column64);
    record.column_violation_median = median(column64);
    record.final_residual_max = finite_max(residual64);
    record.final_residual_median = median(residual64);
    record.saturated_matrices =
        std::count_if(zeros.begin(), zeros.end(), [](auto z) { return z > 0; });
  }
  std::vector<Real> row, column, residual;
  std::vector<std::int32_t> zeros;
};

}  // namespace

RunRecord Runner::run(const RunSpec& run, const InputSpec& input, const InputData& data,
                      InputReferences& references) {
  const HostBatch<double> logits = rounded_to(run.precision, data.logits);
  const HostBatch<double> grad_output = rounded_to(run.precision, data.grad_output);
  const HostBatch<double>& unrolled =
      unrolled_reference_for(log_, run, input, logits, grad_output, references);
  const ConvergedReference& converged =
      converged_reference_for(log_, definition_, run, input, logits, grad_output, references);
  return run.precision == Precision::float32
             ? measure<float>(run, logits, grad_output, unrolled, converged)
             : measure<double>(run, logits, grad_output, unrolled, converged);
}

template <class Real>
RunRecord Runner::measure(const RunSpec& run, const HostBatch<double>& logits64,
                          const HostBatch<double>& grad_output64, const HostBatch<double>& unrolled,
                          const ConvergedReference& converged) {
  RunRecord record;
  record.started = utc_now();
  const auto start = Clock::now();
  const index_t batch = logits64.batch();
  const int n = logits64.n();
  const auto count = static_cast<std::size_t>(batch);
  const HostBatch<Real> logits = converted<Real>(logits64);
  const HostBatch<Real> grad_output = converted<Real>(grad_output64);

  // Forward in the run's precision on the run's device.
  HostBatch<Real> R(batch, n);
  std::vector<Real> violation(count);
  sinkhorn_forward<Real>(logits.view(), run.T, R.view(), violation.data(), run.device, run.forward);
  const std::vector<double> violation64(violation.begin(), violation.end());
  record.violation_max = finite_max(violation64);
  record.violation_median = median(violation64);
  record.converged_T = converged.T;

  // The measured solve, with its residual history when the solver iterates.
  const auto solver = registry_.create(run.solver, run.options);
  const BackwardProblem<Real> problem{logits.view(), R.view(), grad_output.view(), run.T,
                                      run.forward};
  const int stride = solver->history_length(n, run.precision);
  std::vector<Real> history(count * static_cast<std::size_t>(std::max(stride, 0)));
  HostBatch<Real> gradient(batch, n);
  std::vector<SolveStatus> status(count);
  record.iterations.assign(count, 0);
  DiagnosticsBuffers<Real> diagnostics(count);
  BackwardResult<Real> result{gradient.view(),
                              status.data(),
                              record.iterations.data(),
                              stride > 0 ? history.data() : nullptr,
                              stride,
                              diagnostics.view()};
  // Every iterate's error, from this solve where the solver hands its iterates over.
  const bool score_iterates =
      stride > 0 && definition_.iterate_errors && run.options.count("max_iterations") > 0;
  std::optional<IterateErrors<Real>> iterates;
  if (score_iterates && solver->reports_iterates(run.device) &&
      IterateErrors<Real>::fits(stride - 1, batch)) {
    iterates.emplace(stride - 1, unrolled, converged.gradient);
    result.iterates = &*iterates;
  }
  solve_checked(*solver, problem, result, run.device, "");
  diagnostics.summarise(record);
  for (const SolveStatus s : status) ++record.status_counts[static_cast<std::size_t>(s)];
  record.vs_unrolled = compare_gradients<Real>(gradient.view(), unrolled.view());
  record.vs_converged = compare_gradients<Real>(gradient.view(), converged.gradient.view());

  // Timing: the same solve repeated without the history.
  std::vector<double> times;
  if (run.device == Device::cuda) {
#if defined(SINKGRAD_WITH_CUDA)
    times = time_on_gpu(*solver, problem, definition_.timing_repeats);
    record.timing_method = "cuda events around the solve of device-resident data";
#endif
  } else {
    // Wall clock around the call, which returns when the result is written.
    HostBatch<Real> scratch(batch, n);
    std::vector<SolveStatus> scratch_status(count);
    std::vector<std::int32_t> scratch_iterations(count);
    const BackwardResult<Real> timed{scratch.view(), scratch_status.data(),
                                     scratch_iterations.data()};
    for (int repeat = 0; repeat < definition_.timing_repeats; ++repeat) {
      const auto t0 = Clock::now();
      solver->solve(problem, timed, run.device);
      times.push_back(seconds_since(t0));
    }
    record.timing_method = "wall clock around the solve, host memory";
  }
  record.solve_seconds = median(times);
  record.solve_seconds_min =
      times.empty() ? std::nan("") : *std::min_element(times.begin(), times.end());
  record.timing_repeats = definition_.timing_repeats;

  if (stride > 0) {
    const int used = *std::max_element(record.iterations.begin(), record.iterations.end());
    const std::vector<double> history64(history.begin(), history.end());
    summarise_history(history64, batch, stride, std::min(used, stride - 1), record);
    if (iterates)
      iterates->summarise(gradient.view(), record.iterations.data(), used, record);
    else if (score_iterates)
      iterate_errors_by_resolving<Real>(registry_, run, problem, used, unrolled, converged.gradient,
                                        record);
  }
  record.wall_seconds = seconds_since(start);
  return record;
}

}  // namespace sinkgrad::study
