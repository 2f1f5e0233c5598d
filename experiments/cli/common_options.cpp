#include "experiments/cli/common_options.hpp"

#include <omp.h>

#include "experiments/cli/command.hpp"

namespace sinkgrad::cli {

po::options_description common_options_description() {
  po::options_description options("Common options (every command)", 100, 50);
  options.add_options()                       //
      ("help,h", "print this help and exit")  //
      ("threads", po::value<int>()->value_name("N"),
       "CPU threads for the batch loops (default: OMP_NUM_THREADS, else every core)");
  return options;
}

CommonOptions read_common_options(const po::variables_map& values) {
  CommonOptions options;
  options.help = values.count("help") != 0;
  if (values.count("threads")) {
    options.threads = values["threads"].as<int>();
    if (options.threads < 1)
      throw UsageError("--threads must be >= 1, got " + std::to_string(options.threads));
  }
  return options;
}

void apply_common_options(const CommonOptions& options) {
  if (options.threads > 0) omp_set_num_threads(options.threads);
}

}  // namespace sinkgrad::cli
