#pragma once
// What the tests of `sinkgrad run` share: a tiny study definition and a log's runs by key.

#include <map>
#include <string>

#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::study::testing {

using sinkgrad::testing::contains;

// Four runs on the cpu in well under a second: T = 1, 2 for two solvers.
inline const std::string tiny =
    "# a tiny study\n[study]\nname = tiny\n[inputs]\nn = 3\nbatch = 4\nlogits = uniform(0, 4)\n"
    "[forward]\nT = 1, 2\n[solvers]\nuse = unrolled, cg_corrected\n[measure]\n"
    "timing_repeats = 1\n[run]\ndevices = cpu\n";

// The runs of a log: key -> its group, read back with the HDF5 layer.
inline std::map<std::string, h5::Group> runs_of(const h5::File& log) {
  std::map<std::string, h5::Group> runs;
  const h5::Group group = log.open_group("runs");
  for (const std::string& id : group.children()) {
    const h5::Group run = group.open_group(id);
    runs.emplace(h5::read_string_attribute(run, "key"), run);
  }
  return runs;
}

}  // namespace sinkgrad::study::testing
