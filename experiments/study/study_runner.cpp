#include "experiments/study/study_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <string>

#include <omp.h>

#include "core/solver_registry.hpp"
#include "experiments/study/host_info.hpp"
#include "experiments/study/input_data.hpp"
#include "experiments/study/measure.hpp"
#include "experiments/study/progress_line.hpp"
#include "experiments/study/reference_cache.hpp"
#include "experiments/study/study_log.hpp"
#include "experiments/study/sweep.hpp"
#include "io/hdf5_links.hpp"
#include "io/memory_budget.hpp"
#include "io/output_policy.hpp"
#include "solvers/unrolled/replay_tape.hpp"

namespace sinkgrad::study {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A run holds about 16 batches of doubles at once (the input, its rounded and converted
// copies, both references, R, the gradients, the timing scratch), the solver's residual
// history (B rows) and a per-thread workspace with the whole unrolled tape (every study runs
// the unrolled reference).
void require_sweep_memory(const StudyDefinition& definition, const Sweep& sweep) {
  int most_T = definition.converged_max_iterations;  // the converged reference's replay
  for (const int T : definition.iterations) most_T = std::max(most_T, T);
  std::vector<std::uint64_t> history(sweep.inputs.size(), 0);
  for (const RunSpec& run : sweep.runs) {
    const int n = sweep.inputs[run.input].n;
    const int stride =
        SolverRegistry::global().create(run.solver, run.options)->history_length(n, run.precision);
    history[run.input] = std::max<std::uint64_t>(history[run.input], std::max(stride, 0));
  }
  for (std::size_t i = 0; i < sweep.inputs.size(); ++i) {
    const InputSpec& input = sweep.inputs[i];
    const auto n = static_cast<std::uint64_t>(input.n);
    MemoryEstimate estimate;
    estimate.batches(16, input.batch, input.n, sizeof(double))
        .add(static_cast<std::uint64_t>(input.batch), 16 + 16 * history[i])
        .add(static_cast<std::uint64_t>(omp_get_max_threads()),
             (8 * n * n +
              static_cast<std::uint64_t>(math::unrolled_cpu_tape_reals(input.n, most_T))) *
                 sizeof(double));
    require_memory(estimate, "the input " + input.key);
  }
}

std::string run_label(const RunSpec& run, const InputSpec& input) {
  std::string options;
  for (const auto& [name, value] : run.options)
    if (value != "auto") options += " " + name + "=" + value;
  return "n=" + std::to_string(input.n) + " " + input.logits.text + " T=" + std::to_string(run.T) +
         forward_key(run.forward) + " " + std::string(to_string(run.precision)) + " " + run.solver +
         options + " " + std::string(to_string(run.device));
}

}  // namespace

RunnerSummary run_study(const StudyDefinition& definition, const RunnerOptions& options) {
  const auto start = Clock::now();
  const std::vector<Device> devices =
      resolve_devices(options.devices.empty() ? definition.devices : options.devices);
  const SolverRegistry& registry = SolverRegistry::global();
  for (const SolverSweep& solver : definition.solvers)
    for (const Device device : devices)
      if (!registry.info(solver.name).supports(device))
        throw DefinitionError("solver '" + solver.name + "' does not run on " +
                              std::string(to_string(device)) + " in this build");
  const Sweep sweep = expand_sweep(definition, devices);
  // Before the log is created: nothing is left behind when the sweep cannot run.
  require_sweep_memory(definition, sweep);
  std::vector<std::string> inputs{definition.source_path};
  for (const LogitSource& logits : definition.logits)
    if (logits.from_file()) inputs.push_back(logits.path);
  const std::string output = checked_output_path(options.output, inputs);
  for (const LogitSource& logits : definition.logits)
    h5::refuse_output_among(output, logits.linked);

  LogHeader header;
  header.tool_version = options.tool_version;
  header.definition = definition.text;
  header.study = definition.entries;
  for (const std::string& given : definition.overrides) header.overrides += given + "\n";
  header.definition_path = definition.source_path;
  header.study_name = definition.name;
  header.started = utc_now();
  header.host = host_name();
  header.devices = devices_text(devices);
  StudyLog log = StudyLog::open(output, header, options.resume);

  const std::set<std::string> finished = log.finished_runs();
  std::vector<const RunSpec*> todo;
  for (const RunSpec& run : sweep.runs)
    if (finished.count(run.id) == 0) todo.push_back(&run);
  RunnerSummary summary;
  summary.total = sweep.runs.size();
  summary.already_done = summary.total - todo.size();
  const std::size_t planned = std::min(todo.size(), options.max_runs.value_or(todo.size()));

  Runner runner(definition, log);
  ProgressLine progress(planned, options.progress);
  const auto stop = [&] {
    summary.interrupted = options.stop_requested != nullptr && *options.stop_requested != 0;
    return summary.interrupted;
  };
  // A write that fails ends the sweep with a message: it starts on a line of its own.
  struct ClearOnThrow {
    ProgressLine& line;
    ~ClearOnThrow() {
      if (std::uncaught_exceptions() > 0) line.clear();
    }
  } clear_on_throw{progress};
  std::size_t next = 0;
  while (next < planned && !stop()) {
    const std::size_t input_index = todo[next]->input;
    const InputSpec& input = sweep.inputs[input_index];
    const InputData data = make_input_data(input);
    if (!log.has_input(input)) log.write_input(input, data.logits, data.grad_output);
    InputReferences references;
    for (; next < planned && todo[next]->input == input_index && !stop(); ++next) {
      progress.update(summary.done_now, run_label(*todo[next], input));
      // The exception boundary of one run: whatever it throws fails this run only. Writing
      // to the log is outside it: a run that cannot be recorded (a full disk) stops the sweep,
      // with the log as it was after the last complete run.
      std::optional<RunRecord> record;
      std::string failure;
      try {
        record = runner.run(*todo[next], input, data, references);
      } catch (const std::exception& error) {
        failure = error.what();
      } catch (...) {
        failure = "an exception that is not a std::exception";
      }
      if (record) {
        log.write_run(*todo[next], input, *record);
        ++summary.done_now;
      } else {
        ++summary.failed;
        failure =
            "run " + todo[next]->id + " (" + run_label(*todo[next], input) + ") failed: " + failure;
        log.write_failed_run(*todo[next], failure);
        if (options.failures != nullptr) {
          progress.clear();
          *options.failures << "sinkgrad run: " << failure << "\n";
        }
        if (options.stop_on_error) {
          ++next;
          break;
        }
      }
    }
    if (options.stop_on_error && summary.failed > 0) break;
  }
  progress.finish(summary.done_now);
  summary.remaining = todo.size() - summary.done_now;
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace sinkgrad::study
