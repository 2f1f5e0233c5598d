#pragma once
// The HDF5 log of a study (schema: docs/experiments.md). One file holds the definition, the
// inputs, the references and one group per finished run:
//
//   /                                  attrs: schema, schema_version, tool_version, definition,
//                                             study, overrides, definition_path, study_name,
//                                             started, host, devices
//   /inputs/input_<hash>               attrs: key, n, batch, logits, seed; logits, grad_output
//   /references/input_<hash>/<precision>/converged     grad; attrs T, violation_max, reached
//   /references/input_<hash>/<precision>/T_<T>         grad; attrs T
//   /runs/run_<hash>                   attrs: parameters and scalar results; datasets below
//
// A group is marked finished by its attribute `complete` = 1, written last and flushed: a
// sweep killed half-way keeps every finished run, and a resumed one removes unfinished groups
// and finds the finished ones by id (a hash of the run's parameter key, stored as `key`).

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/status.hpp"
#include "experiments/study/definition_entries.hpp"
#include "experiments/study/metrics.hpp"
#include "experiments/study/references.hpp"
#include "experiments/study/sweep.hpp"
#include "io/hdf5.hpp"

namespace sinkgrad::study {

inline constexpr const char* log_schema = "sinkgrad-study-log";
// 2: study, overrides, descriptions; 3: the runs' solve diagnostics
inline constexpr std::int64_t log_schema_version = 3;

struct LogHeader {
  std::string tool_version;
  std::string definition;  // full text
  Entries study;           // the parsed definition after the overrides: what --resume compares
  std::string overrides;   // the command-line overrides, one "section.key=value" a line
  std::string definition_path;
  std::string study_name;
  std::string started;  // ISO 8601, UTC
  std::string host;
  std::string devices;  // e.g. "cpu: AMD EPYC 7B13 (2 threads)"
};

// Everything measured in one run.
struct RunRecord {
  std::string started;
  double wall_seconds = 0;  // the whole run: forward, solves, metrics, iterate re-solves
  double violation_max = 0;
  double violation_median = 0;
  ErrorMetrics vs_unrolled;
  ErrorMetrics vs_converged;
  int converged_T = 0;
  // The measured solve's SolveDiagnostics over the batch (max and median of the finite values,
  // NaN when none: final_residual for a solver without CG).
  double row_violation_max = 0, row_violation_median = 0;
  double column_violation_max = 0, column_violation_median = 0;
  double final_residual_max = 0, final_residual_median = 0;
  std::int64_t saturated_matrices = 0;  // matrices with an entry of R exactly zero
  std::array<std::int64_t, status_count> status_counts{};
  std::vector<std::int32_t> iterations;  // per matrix
  double solve_seconds = 0;              // median over the timed repeats
  double solve_seconds_min = 0;
  int timing_repeats = 0;
  std::string timing_method;
  // Iterative solvers only (empty otherwise): index k = iteration k.
  std::vector<double> residual_median, residual_max;
  std::vector<double> relative_residual_median, relative_residual_max;
  // Index k - 1 = the gradient after k iterations (k = 1 .. K).
  std::vector<double> iterate_error_unrolled_median, iterate_error_converged_median;
};

class StudyLog {
 public:
  // Without resume: creates the file and refuses an existing one. With resume: opens the
  // file when it exists (it must be a study log of the same parsed, overridden study: comments
  // and layout may differ, values may not) and removes the
  // groups a killed sweep left unfinished, or creates it when it does not.
  static StudyLog open(const std::string& path, const LogHeader& header, bool resume);

  const std::string& path() const { return path_; }
  std::set<std::string> finished_runs() const;

  void write_input(const InputSpec& input, const HostBatch<double>& logits,
                   const HostBatch<double>& grad_output);
  bool has_input(const InputSpec& input) const;

  // forward: forward_key(run.forward), appended to the reference's group name ("" by default).
  std::optional<HostBatch<double>> read_unrolled_reference(const InputSpec& input,
                                                           Precision precision, int T,
                                                           const std::string& forward) const;
  void write_unrolled_reference(const InputSpec& input, Precision precision, int T,
                                const std::string& forward, const HostBatch<double>& gradient);
  std::optional<ConvergedReference> read_converged_reference(const InputSpec& input,
                                                             Precision precision,
                                                             const std::string& forward) const;
  void write_converged_reference(const InputSpec& input, Precision precision,
                                 const std::string& forward, const ConvergedReference& reference);

  // Writes the run's group, marks it complete and flushes the file.
  void write_run(const RunSpec& run, const InputSpec& input, const RunRecord& record);
  // A run that threw: runs/<id> with its key, solver, error = the message, failed = 1 and
  // complete = 0, so that readers skip it and --resume tries it again.
  void write_failed_run(const RunSpec& run, const std::string& error);

 private:
  StudyLog(h5::File file, std::string path) : file_(std::move(file)), path_(std::move(path)) {}
  void remove_unfinished(const std::string& parent) const;

  h5::File file_;
  std::string path_;
};

}  // namespace sinkgrad::study
