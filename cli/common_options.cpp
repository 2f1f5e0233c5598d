#include "cli/common_options.hpp"

#include <omp.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli/command.hpp"
#include "core/limits.hpp"
#include "core/plugin_loader.hpp"

namespace sinkgrad::cli {
namespace {

constexpr int max_threads = limits::max_threads;

}  // namespace

po::options_description common_options_description() {
  po::options_description options("Common options (every command)", 100, 50);
  options.add_options()                       //
      ("help,h", "print this help and exit")  //
      ("threads", po::value<int>()->value_name("N"),
       "CPU threads for the batch loops, 1 to 1024 (default: OMP_NUM_THREADS, which must then "
       "be at most 1024, else every core)")  //
      ("plugin", po::value<std::vector<std::string>>()->composing()->value_name("PATH"),
       "load solver plugins from a shared library or a directory of them (repeatable; also "
       "read from SINKGRAD_PLUGIN_PATH, colon-separated)");
  return options;
}

double parse_real_option(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isspace(text[0]))
    throw UsageError("--" + option + ": '" + text + "' is not a number");
  // ERANGE: overflow to infinity, or underflow to 0 or a subnormal (precision lost).
  if (errno == ERANGE)
    throw UsageError("--" + option + ": '" + text + "' is beyond a double's range (it would be " +
                     (std::isinf(value) ? "infinite" : "0 or lose its digits") + ")");
  return value;
}

CommonOptions read_common_options(const po::variables_map& values) {
  CommonOptions options;
  options.help = values.count("help") != 0;
  if (values.count("threads")) {
    options.threads = values["threads"].as<int>();
    // libgomp gives each thread a stack: tens of thousands of them overflow (SIGSEGV).
    if (options.threads < 1 || options.threads > max_threads)
      throw UsageError("--threads must be between 1 and " + std::to_string(max_threads) + ", got " +
                       std::to_string(options.threads));
  }
  if (values.count("plugin")) options.plugins = values["plugin"].as<std::vector<std::string>>();
  return options;
}

void apply_common_options(const CommonOptions& options) {
  // Before any OpenMP region: --threads replaces OMP_NUM_THREADS, and without it a value above
  // the bound is refused here, at startup, rather than crashing libgomp in the first region
  // (with an output file half written). Refused rather than capped: a silently different
  // thread count would hide the mistake in timings.
  if (options.threads > 0) {
    omp_set_num_threads(options.threads);
  } else {
    try {
      limits::check_thread_count();
    } catch (const Error& error) {
      throw UsageError(std::string(error.what()) + ", or give --threads N");
    }
  }
  load_configured_plugins(options.plugins);
}

}  // namespace sinkgrad::cli
