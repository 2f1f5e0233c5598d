// `sinkgrad run`: runs a study definition (experiments/*.ini, format in docs/experiments.md)
// and writes its HDF5 log. The definition is checked completely, and the devices resolved,
// before anything is computed; each run is committed to the log when it finishes.

#include <csignal>
#include <filesystem>
#include <iostream>

#include "cli/command.hpp"
#include "cli/install_paths.hpp"
#include "cli/text_format.hpp"
#include "cli/version.hpp"
#include "core/solver_registry.hpp"
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

// DIR/DEFINITION.ini -> DEFINITION.h5 in the current directory (never into the source tree).
std::string default_output(const std::string& definition) {
  return std::filesystem::path(definition).stem().string() + ".h5";
}

// The command line that completes a stopped sweep, overrides included.
std::string resume_command(const std::string& path, const std::vector<std::string>& overrides,
                           const std::string& output) {
  std::string command = "sinkgrad run " + path;
  for (const std::string& given : overrides)
    command +=
        given.find_first_of(" ()'\"") == std::string::npos ? " " + given : " '" + given + "'";
  return command + " --output " + output + " --resume";
}

int run_run(const po::variables_map& values) {
  const std::string path = values["definition"].as<std::string>();
  const std::vector<std::string> overrides = values.count("override")
                                                 ? values["override"].as<std::vector<std::string>>()
                                                 : std::vector<std::string>{};
  study::StudyDefinition definition;
  try {
    definition = study::read_definition(path, SolverRegistry::global(), overrides);
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
  options.progress = values.count("quiet")         ? study::ProgressMode::off
                     : study::stderr_is_terminal() ? study::ProgressMode::terminal
                                                   : study::ProgressMode::lines;
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
    std::cout << "sinkgrad run: stopped by " << stopped_by
              << "; complete it with: " << resume_command(path, overrides, options.output) << "\n";
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
  command.usage =
      "DEFINITION.ini [SECTION.KEY=VALUE ...] [--output LOG.h5] [--resume] "
      "[--device cpu|cuda|default ...] [--max-runs K] [--stop-on-error] [--quiet] "
      "[--threads N] [--plugin PATH]";
  command.description =
      "The definition format and the log's schema are in docs/experiments.md. Any key of the "
      "definition can be replaced on the command line, lists included: 'sinkgrad run "
      "headline.ini inputs.n=4 forward.T=1,2,5'; the overrides are recorded in the log. Each "
      "run is committed to the log when it finishes: a killed sweep keeps every finished run, "
      "and a write that fails (a full disk) stops the sweep (exit code 1) with the log as it "
      "was after its last complete run. An existing log is never overwritten: without --resume "
      "it is refused; --resume keeps its complete runs and runs only the missing ones, with "
      "the same fixed settings and each sweep list the same or wider (a changed or narrowed "
      "key is refused naming it; comments and layout do not matter; the rule for an existing "
      "log: docs/experiments.md). One process writes a log at a time (lock file LOG.h5.lock). "
      "Ctrl-C (SIGINT) or SIGTERM stops after the run in progress is written (exit code 130); "
      "a second one stops at once. A wrong definition is rejected before anything is computed "
      "(exit code 2). Progress goes to stderr: a live line on a terminal, otherwise a line every "
      "tenth of the sweep or every 10 s.\n"
      "Bundled studies: " +
      studies_directory() +
      "/*.ini\n"
      "Pictures: python3 " +
      plot_script() +
      " LOG.h5\n"
      "Tables: sinkgrad summary LOG.h5 [--csv]\n"
      "Example: sinkgrad run " +
      studies_directory() + "/headline.ini inputs.n=4 --output headline_n4.h5 --resume";
  command.add_options = [](po::options_description& options) {
    options.add_options()  //
        ("definition", po::value<std::string>()->required()->value_name("DEFINITION.ini"),
         "the study definition (also the first positional argument)")  //
        ("output,o", po::value<std::string>()->value_name("LOG.h5"),
         "the HDF5 log (default: the definition's name with .h5, in the current directory)")  //
        ("resume",
         "complete an existing log: run only what it lacks, the same or a widened sweep "
         "(creates it if missing)")  //
        ("device", po::value<std::vector<std::string>>()->multitoken()->value_name("DEVICE"),
         "replaces the definition's [run] devices: cpu, cuda, default (cuda when a GPU is "
         "usable, else cpu)")  //
        ("max-runs", po::value<long long>()->value_name("K"),
         "stop after K new runs (the log stays resumable)")  //
        ("override", po::value<std::vector<std::string>>()->value_name("SECTION.KEY=VALUE"),
         "replaces a key of the definition, e.g. inputs.n=4 or forward.T=1,2,5 (also any "
         "positional argument after the definition)")  //
        ("quiet,q", "no progress on stderr")           //
        ("stop-on-error",
         "stop at the first run that fails (default: record it as failed and go on)");
  };
  command.positional = {"definition"};
  command.positional_rest = "override";
  command.run = run_run;
  return command;
}

}  // namespace sinkgrad::cli
