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
// A group is marked finished by its attribute `complete` = 1, written last and committed: a
// sweep killed half-way keeps every finished run, and a resumed one removes unfinished groups
// and finds the finished ones by id (a hash of the run's parameter key, stored as `key`).

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
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
#include "io/writer_lock.hpp"

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

// Every write (the header, an input, a reference, a run) is committed on its own under an undo
// journal (io/undo_journal.hpp): when one fails (a full disk, a file-size limit) it throws an
// Error saying so, the log goes back to its state after the last complete write when it is
// closed, and every later write throws the same Error. The log is locked for its writer
// (io/writer_lock.hpp) from open() until it is destroyed.
class StudyLog {
 public:
  // Creates the log when it does not exist. An existing log needs resume, and then the rule of
  // docs/experiments.md ("An existing log"): the same fixed settings, each sweep list the same
  // or a superset (resume_difference); a widened study replaces the log's definition. The
  // groups a killed sweep left unfinished are removed.
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

  // Writes the run's group, marks it complete and commits it.
  void write_run(const RunSpec& run, const InputSpec& input, const RunRecord& record);
  // A run that threw: runs/<id> with its key, solver, error = the message, failed = 1 and
  // complete = 0, so that readers skip it and --resume tries it again.
  void write_failed_run(const RunSpec& run, const std::string& error);

 private:
  StudyLog(std::unique_ptr<WriterLock> lock, h5::File file, std::string path)
      : lock_(std::move(lock)), file_(std::move(file)), path_(std::move(path)) {}
  void remove_unfinished(const std::string& parent) const;
  // Runs `write` and commits it; on failure abandons the file (see above) and throws.
  void record(const std::string& what, const std::function<void()>& write);

  std::unique_ptr<WriterLock> lock_;  // first: released after the file is closed
  h5::File file_;
  std::string path_;
  std::string failure_;  // the first failed write, repeated by every later one
};

}  // namespace sinkgrad::study
