// `sinkgrad run`: runs a study definition (experiments/*.ini, format in docs/experiments.md)
// and writes its HDF5 log. The definition is checked completely, and the devices resolved,
// before anything is computed; each run is written and flushed when it finishes.

#include <csignal>
#include <iostream>

#include "core/solver_registry.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/cli/text_format.hpp"
#include "experiments/cli/version.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/progress_line.hpp"
#include "experiments/study/study_runner.hpp"

namespace sinkgrad::cli {
namespace {

// Exit code after a stop on SIGINT / SIGTERM (the finished runs are in the log): 128 + SIGINT,
// as a shell reports an interrupted command.
constexpr int exit_interrupted = 130;

// The first SIGINT / SIGTERM asks the sweep to stop after the run in progress (which is then
// written, so the log stays complete); a second one ends the process at once.
volatile std::sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int signal) {
  if (stop_requested != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  stop_requested = 1;
}

// Installs request_stop for the lifetime of a sweep and restores the previous handlers.
class StopOnInterrupt {
 public:
  StopOnInterrupt()
      : previous_int_(std::signal(SIGINT, request_stop)),
        previous_term_(std::signal(SIGTERM, request_stop)) {}
  ~StopOnInterrupt() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

// DEFINITION.ini -> DEFINITION.h5 next to it.
std::string default_output(const std::string& definition) {
  const auto dot = definition.rfind('.');
  const auto slash = definition.rfind('/');
  const bool has_extension =
      dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_extension ? definition.substr(0, dot) : definition) + ".h5";
}

int run_run(const po::variables_map& values) {
  const std::string path = values["definition"].as<std::string>();
  study::StudyDefinition definition;
  try {
    definition = study::read_definition(path, SolverRegistry::global());
  } catch (const study::DefinitionError& error) {
    throw UsageError(error.what());
  }
  study::RunnerOptions options;
  options.output =
      values.count("output") ? values["output"].as<std::string>() : default_output(path);
  options.resume = values.count("resume") != 0;
  if (values.count("device")) options.devices = values["device"].as<std::vector<std::string>>();
  if (values.count("max-runs")) {
    const long long max_runs = values["max-runs"].as<long long>();
    if (max_runs < 0) throw UsageError("--max-runs must be >= 0");
    options.max_runs = static_cast<std::size_t>(max_runs);
  }
  options.progress = !values.count("quiet") && study::stderr_is_terminal();
  options.tool_version = version;

  options.stop_requested = &stop_requested;
  options.stop_on_error = values.count("stop-on-error") != 0;
  options.failures = &std::cerr;

  study::RunnerSummary summary;
  try {
    const StopOnInterrupt stop_on_interrupt;
    summary = study::run_study(definition, options);
  } catch (const study::DefinitionError& error) {
    throw UsageError(error.what());
  }
  std::cout << "sinkgrad run: " << options.output << ": " << summary.total << " runs ("
            << summary.already_done << " already in the log, " << summary.done_now << " run now, "
            << summary.remaining << " left) in " << fixed(summary.seconds, 1) << " s\n";
  const char* stopped_by = summary.interrupted                           ? "a signal"
                           : options.stop_on_error && summary.failed > 0 ? "--stop-on-error"
                                                                         : "--max-runs";
  if (summary.remaining > summary.failed || summary.interrupted ||
      (options.stop_on_error && summary.failed > 0))
    std::cout << "sinkgrad run: stopped by " << stopped_by << "; complete it with: sinkgrad run "
              << path << " --output " << options.output << " --resume\n";
  if (summary.failed > 0) {
    std::cout << "sinkgrad run: " << summary.failed
              << " run(s) failed (recorded in the log with their error; --resume retries them)\n";
    if (!summary.interrupted) return exit_failure;
  }
  return summary.interrupted ? exit_interrupted : exit_ok;
}

}  // namespace

Command make_run_command() {
  Command command;
  command.name = "run";
  command.summary =
      "Run a study: the sweep a definition file describes (inputs x forward x solvers x "
      "devices), every solver measured against the exact unrolled and the converged "
      "gradients; writes an HDF5 log.";
  command.usage = "DEFINITION.ini [--output LOG.h5] [--resume] [--device cpu|cuda|default ...]";
  command.description =
      "The definition format and the log's schema are in docs/experiments.md; bundled "
      "studies are experiments/*.ini. Each run is written and flushed when it finishes: a "
      "killed sweep keeps every finished run, and --resume runs only the missing ones (a log "
      "made from another definition is refused). Ctrl-C (SIGINT) or SIGTERM stops after the run "
      "in progress is written (exit code 130); a second one stops at once. An existing log is "
      "never overwritten without --resume. A wrong definition is rejected before anything is "
      "computed (exit code 2).\n"
      "Pictures: python3 experiments/plot.py LOG.h5\n"
      "Example: sinkgrad run experiments/headline.ini --output results/headline.h5 --resume";
  command.add_options = [](po::options_description& options) {
    options.add_options()  //
        ("definition", po::value<std::string>()->required()->value_name("DEFINITION.ini"),
         "the study definition (also the first positional argument)")  //
        ("output,o", po::value<std::string>()->value_name("LOG.h5"),
         "the HDF5 log (default: the definition's name with .h5)")                              //
        ("resume", "complete an existing log: run only what it lacks (creates it if missing)")  //
        ("device", po::value<std::vector<std::string>>()->multitoken()->value_name("DEVICE"),
         "replaces the definition's [run] devices: cpu, cuda, default (cuda when a GPU is "
         "usable, else cpu)")  //
        ("max-runs", po::value<long long>()->value_name("K"),
         "stop after K new runs (the log stays resumable)")                      //
        ("quiet,q", "no progress line (it is drawn only on a terminal anyway)")  //
        ("stop-on-error",
         "stop at the first run that fails (default: record it as failed and go on)");
  };
  command.positional = {"definition"};
  command.run = run_run;
  return command;
}

}  // namespace sinkgrad::cli
