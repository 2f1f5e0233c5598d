#pragma once
// Runs a study: expands the definition, skips the runs the log already holds (--resume),
// computes each input's references once, runs every missing run and writes it to the log as
// soon as it finishes. Everything that can be checked (devices, solver support) is checked
// before the first computation.

#include <csignal>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/host_info.hpp"  // resolve_devices
#include "experiments/study/progress_line.hpp"

namespace sinkgrad::study {

struct RunnerOptions {
  std::string output;                   // the HDF5 log
  bool resume = false;                  // complete an existing log instead of refusing it
  std::vector<std::string> devices;     // replaces the definition's [run] devices when not empty
  std::optional<std::size_t> max_runs;  // stop after this many new runs (the log stays resumable)
  ProgressMode progress = ProgressMode::off;  // how progress is shown on stderr
  std::string tool_version;
  // When not null and set (e.g. by a SIGINT handler), the sweep stops after the run in progress
  // has been written: the log stays complete and resumable.
  const volatile std::sig_atomic_t* stop_requested = nullptr;
  // A run that throws is reported, recorded in the log as failed, and the sweep goes on;
  // with stop_on_error it stops there instead (the log stays resumable).
  bool stop_on_error = false;
  // Where each failure is reported (one line each); null: not reported.
  std::ostream* failures = nullptr;
};

struct RunnerSummary {
  std::size_t total = 0;         // runs in the sweep
  std::size_t already_done = 0;  // found finished in the log
  std::size_t done_now = 0;
  std::size_t remaining = 0;  // left for a later --resume (max_runs or a stop request)
  bool interrupted = false;   // stopped by stop_requested
  std::size_t failed = 0;     // runs that threw (recorded in the log as failed, not finished)
  double seconds = 0;
};

RunnerSummary run_study(const StudyDefinition& definition, const RunnerOptions& options);

}  // namespace sinkgrad::study
