#include "experiments/study/study_log.hpp"

#include <filesystem>

#include "experiments/study/log_descriptions.hpp"

namespace sinkgrad::study {
namespace {

constexpr const char* complete_attribute = "complete";

bool finished(const h5::Object& object) {
  return h5::has_attribute(object, complete_attribute) &&
         h5::read_int_attribute(object, complete_attribute) == 1;
}

void mark_finished(const h5::Object& object) {
  h5::write_int_attribute(object, complete_attribute, 1);
}

std::string reference_path(const InputSpec& input, Precision precision, const std::string& leaf) {
  return "references/" + input.id + "/" + std::string(to_string(precision)) + "/" + leaf;
}

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

std::optional<HostBatch<double>> read_gradient(const h5::File& file, const std::string& path,
                                               const InputSpec& input) {
  if (!file.has_group(path)) return std::nullopt;
  const h5::Group group = file.open_group(path);
  if (!finished(group) || !group.has_dataset("grad")) return std::nullopt;
  HostBatch<double> gradient = h5::read_batch<double>(group, "grad");
  if (gradient.batch() != input.batch || gradient.n() != input.n) return std::nullopt;
  return gradient;
}

}  // namespace

StudyLog StudyLog::open(const std::string& path, const LogHeader& header, bool resume) {
  if (resume && std::filesystem::exists(path)) {
    h5::File file = h5::File::open(path, h5::File::Mode::read_write);
    if (!h5::has_attribute(file, "schema") ||
        h5::read_string_attribute(file, "schema") != log_schema)
      throw Error("'" + path + "' is not a sinkgrad study log (no attribute schema = " +
                  log_schema + "); give another --output");
    // Logs written before the canonical study was stored: derive it from the definition text.
    const Entries logged =
        h5::has_attribute(file, "study")
            ? read_entries(h5::read_string_attribute(file, "study"), "'" + path + "'")
            : read_entries(h5::read_string_attribute(file, "definition"), "'" + path + "'");
    if (const std::string difference = first_difference(logged, header.study); !difference.empty())
      throw Error("'" + path + "' was made from a different study: " + difference + " ('" +
                  header.definition_path +
                  "' with its overrides); resume only with the same values, or give another "
                  "--output");
    write_descriptions(file);  // logs of older versions lack them
    StudyLog log(std::move(file), path);
    log.remove_unfinished("runs");
    log.remove_unfinished("inputs");
    if (log.file_.has_group("references"))
      for (const std::string& input : log.file_.open_group("references").children())
        for (const std::string& precision : log.file_.open_group("references/" + input).children())
          log.remove_unfinished("references/" + input + "/" + precision);
    log.file_.flush();
    return log;
  }
  if (std::filesystem::exists(path))
    throw Error("the log '" + path +
                "' exists; pass --resume to complete it, or give another "
                "--output");
  h5::File file = h5::File::create(path, h5::File::Exists::fail);
  h5::write_string_attribute(file, "schema", log_schema);
  h5::write_int_attribute(file, "schema_version", log_schema_version);
  h5::write_string_attribute(file, "tool_version", header.tool_version);
  h5::write_string_attribute(file, "definition", header.definition);
  h5::write_string_attribute(file, "study", canonical_text(header.study));
  h5::write_string_attribute(file, "overrides", header.overrides);
  h5::write_string_attribute(file, "definition_path", header.definition_path);
  h5::write_string_attribute(file, "study_name", header.study_name);
  h5::write_string_attribute(file, "started", header.started);
  h5::write_string_attribute(file, "host", header.host);
  h5::write_string_attribute(file, "devices", header.devices);
  write_descriptions(file);
  file.create_group("inputs");
  file.create_group("references");
  file.create_group("runs");
  file.flush();
  return StudyLog(std::move(file), path);
}

void StudyLog::remove_unfinished(const std::string& parent) const {
  if (!file_.has_group(parent)) return;
  const h5::Group group = file_.open_group(parent);
  for (const std::string& child : group.children())
    if (!group.has_group(child) || !finished(group.open_group(child))) group.remove(child);
}

std::set<std::string> StudyLog::finished_runs() const {
  std::set<std::string> ids;
  const h5::Group runs = file_.require_group("runs");
  for (const std::string& child : runs.children())
    if (runs.has_group(child) && finished(runs.open_group(child))) ids.insert(child);
  return ids;
}

bool StudyLog::has_input(const InputSpec& input) const {
  const std::string path = "inputs/" + input.id;
  return file_.has_group(path) && finished(file_.open_group(path));
}

void StudyLog::write_input(const InputSpec& input, const HostBatch<double>& logits,
                           const HostBatch<double>& grad_output) {
  const h5::Group group = file_.require_group("inputs").create_group(input.id);
  h5::write_string_attribute(group, "key", input.key);
  h5::write_int_attribute(group, "n", input.n);
  h5::write_int_attribute(group, "batch", input.batch);
  h5::write_string_attribute(group, "logits_source", input.logits.text);
  h5::write_int_attribute(group, "seed", static_cast<std::int64_t>(input.seed));
  described(h5::write_batch<double>(group, "logits", logits.view()));
  described(h5::write_batch<double>(group, "grad_output", grad_output.view()));
  mark_finished(group);
  file_.flush();
}

std::optional<HostBatch<double>> StudyLog::read_unrolled_reference(
    const InputSpec& input, Precision precision, int T, const std::string& forward) const {
  return read_gradient(file_, reference_path(input, precision, "T_" + std::to_string(T) + forward),
                       input);
}

void StudyLog::write_unrolled_reference(const InputSpec& input, Precision precision, int T,
                                        const std::string& forward,
                                        const HostBatch<double>& gradient) {
  const h5::Group group =
      file_.require_group(reference_path(input, precision, "T_" + std::to_string(T) + forward));
  h5::write_int_attribute(group, "T", T);
  described(h5::write_batch<double>(group, "grad", gradient.view()));
  mark_finished(group);
  file_.flush();
}

std::optional<ConvergedReference> StudyLog::read_converged_reference(
    const InputSpec& input, Precision precision, const std::string& forward) const {
  const std::string path = reference_path(input, precision, "converged" + forward);
  auto gradient = read_gradient(file_, path, input);
  if (!gradient) return std::nullopt;
  const h5::Group group = file_.open_group(path);
  ConvergedReference reference;
  reference.gradient = std::move(*gradient);
  reference.T = static_cast<int>(h5::read_int_attribute(group, "T"));
  reference.violation_max = h5::read_double_attribute(group, "violation_max");
  reference.reached = h5::read_int_attribute(group, "reached") != 0;
  return reference;
}

void StudyLog::write_converged_reference(const InputSpec& input, Precision precision,
                                         const std::string& forward,
                                         const ConvergedReference& reference) {
  const h5::Group group =
      file_.require_group(reference_path(input, precision, "converged" + forward));
  h5::write_int_attribute(group, "T", reference.T);
  h5::write_double_attribute(group, "violation_max", reference.violation_max);
  h5::write_int_attribute(group, "reached", reference.reached ? 1 : 0);
  described(h5::write_batch<double>(group, "grad", reference.gradient.view()));
  mark_finished(group);
  file_.flush();
}

void StudyLog::write_failed_run(const RunSpec& run, const std::string& error) {
  const h5::Group runs = file_.require_group("runs");
  if (runs.has(run.id)) runs.remove(run.id);
  const h5::Group group = runs.create_group(run.id);
  h5::write_string_attribute(group, "key", run.key);
  h5::write_string_attribute(group, "solver", run.solver);
  h5::write_string_attribute(group, "error", error);
  h5::write_int_attribute(group, "failed", 1);
  h5::write_int_attribute(group, complete_attribute, 0);
  file_.flush();
}

void StudyLog::write_run(const RunSpec& run, const InputSpec& input, const RunRecord& record) {
  const h5::Group runs = file_.require_group("runs");
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
  mark_finished(group);
  file_.flush();
}

}  // namespace sinkgrad::study
