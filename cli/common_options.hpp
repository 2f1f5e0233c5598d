#pragma once
// The options every command accepts, declared, read and applied in this one place: a new
// shared option (e.g. --plugin) is added here and every command, and its --help, has it.
//
// They are given after the command name: `sinkgrad grad --threads 2 ...`.

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace sinkgrad::cli {

struct CommonOptions {
  bool help = false;
  int threads = 0;                   // 0: OpenMP's default (OMP_NUM_THREADS, else every core)
  std::vector<std::string> plugins;  // --plugin, loaded after SINKGRAD_PLUGIN_PATH
};

// Declares the shared options (shown under "common options" in every command's --help).
boost::program_options::options_description common_options_description();

// Reads them back from the parsed command line; throws UsageError for a bad value.
CommonOptions read_common_options(const boost::program_options::variables_map& values);

// A real option's value as the number its text names: UsageError for text that is not one, or
// whose magnitude is beyond a double's range, including a nonzero value that would be read as 0
// (--eps 1e-400).
double parse_real_option(const std::string& option, const std::string& text);

// Acts on them before the command runs (sets the number of CPU threads, loads the plugins).
void apply_common_options(const CommonOptions& options);

}  // namespace sinkgrad::cli
