#include "experiments/study/run_group.hpp"

#include <algorithm>

#include "experiments/study/log_descriptions.hpp"

namespace sinkgrad::study {
namespace {

void write_metrics(const h5::Group& run, const std::string& name, const ErrorMetrics& m) {
  const h5::Group group = run.create_group(name);
  h5::write_double_attribute(group, "mean_abs", m.mean_abs);
  h5::write_double_attribute(group, "max_abs", m.max_abs);
  h5::write_double_attribute(group, "mean_rel", m.mean_rel);
  h5::write_double_attribute(group, "max_rel", m.max_rel);
  h5::write_double_attribute(group, "frobenius_median", m.frobenius_median);
  h5::write_double_attribute(group, "frobenius_p95", m.frobenius_p95);
  h5::write_double_attribute(group, "frobenius_max", m.frobenius_max);
  h5::write_int_attribute(group, "measured", m.measured);
  described(h5::write_vector<double>(group, "frobenius", m.frobenius));
}

}  // namespace

void write_run_group(const h5::Group& runs, const RunSpec& run, const InputSpec& input,
                     const RunRecord& record) {
  if (runs.has(run.id)) runs.remove(run.id);
  const h5::Group group = runs.create_group(run.id);
  // Parameters.
  h5::write_string_attribute(group, "key", run.key);
  h5::write_string_attribute(group, "input", input.id);
  h5::write_int_attribute(group, "n", input.n);
  h5::write_int_attribute(group, "batch", input.batch);
  h5::write_string_attribute(group, "logits_source", input.logits.text);
  h5::write_int_attribute(group, "seed", static_cast<std::int64_t>(input.seed));
  h5::write_int_attribute(group, "T", run.T);
  h5::write_string_attribute(group, "forward", std::string(to_string(run.forward.convention)));
  h5::write_double_attribute(group, "eps", run.forward.eps);
  h5::write_string_attribute(group, "precision", std::string(to_string(run.precision)));
  h5::write_string_attribute(group, "solver", run.solver);
  h5::write_string_attribute(group, "options", options_text(run.options));
  for (const auto& [name, value] : run.options)
    h5::write_string_attribute(group, "option." + name, value);
  h5::write_string_attribute(group, "device", std::string(to_string(run.device)));
  // Scalars.
  h5::write_string_attribute(group, "started", record.started);
  h5::write_double_attribute(group, "wall_seconds", record.wall_seconds);
  h5::write_double_attribute(group, "forward_violation_max", record.violation_max);
  h5::write_double_attribute(group, "forward_violation_median", record.violation_median);
  h5::write_int_attribute(group, "converged_T", record.converged_T);
  h5::write_double_attribute(group, "row_violation_max", record.row_violation_max);
  h5::write_double_attribute(group, "row_violation_median", record.row_violation_median);
  h5::write_double_attribute(group, "column_violation_max", record.column_violation_max);
  h5::write_double_attribute(group, "column_violation_median", record.column_violation_median);
  h5::write_double_attribute(group, "final_residual_max", record.final_residual_max);
  h5::write_double_attribute(group, "final_residual_median", record.final_residual_median);
  h5::write_int_attribute(group, "saturated_matrices", record.saturated_matrices);
  h5::write_double_attribute(group, "solve_seconds", record.solve_seconds);
  h5::write_double_attribute(group, "solve_seconds_min", record.solve_seconds_min);
  h5::write_int_attribute(group, "timing_repeats", record.timing_repeats);
  h5::write_string_attribute(group, "timing_method", record.timing_method);
  std::int64_t total = 0, most = 0;
  for (const std::int32_t k : record.iterations) {
    total += k;
    most = std::max<std::int64_t>(most, k);
  }
  h5::write_double_attribute(
      group, "iterations_mean",
      record.iterations.empty()
          ? 0.0
          : static_cast<double>(total) / static_cast<double>(record.iterations.size()));
  h5::write_int_attribute(group, "iterations_max", most);
  std::vector<std::int64_t> counts(record.status_counts.begin(), record.status_counts.end());
  h5::write_int_array_attribute(group, "status_counts", counts);
  std::string names;
  for (int code = 0; code < status_count; ++code)
    names.append(code ? "," : "").append(to_string(static_cast<SolveStatus>(code)));
  h5::write_string_attribute(group, "status_names", names);
  // Arrays.
  described(h5::write_vector<std::int32_t>(group, "iterations", record.iterations));
  write_metrics(group, "error_vs_unrolled", record.vs_unrolled);
  write_metrics(group, "error_vs_converged", record.vs_converged);
  if (!record.residual_median.empty()) {
    const h5::Group convergence = group.create_group("convergence");
    described(h5::write_vector<double>(convergence, "residual_median", record.residual_median));
    described(h5::write_vector<double>(convergence, "residual_max", record.residual_max));
    described(h5::write_vector<double>(convergence, "relative_residual_median",
                                       record.relative_residual_median));
    described(h5::write_vector<double>(convergence, "relative_residual_max",
                                       record.relative_residual_max));
    if (!record.iterate_error_unrolled_median.empty()) {
      described(h5::write_vector<double>(convergence, "iterate_error_vs_unrolled_median",
                                         record.iterate_error_unrolled_median));
      described(h5::write_vector<double>(convergence, "iterate_error_vs_converged_median",
                                         record.iterate_error_converged_median));
    }
  }
  h5::write_int_attribute(group, "complete", 1);  // last: the run is whole
}

}  // namespace sinkgrad::study
