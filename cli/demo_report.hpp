#pragma once
// The report of `sinkgrad demo`: per size n and forward T, each solver's error against the
// exact derivative of the T-step forward (`unrolled`), status counts, iterations and time,
// printed as a table, then a legend.

#include <cstdint>
#include <vector>

#include "core/forward_spec.hpp"
#include "core/types.hpp"

namespace sinkgrad::cli {

struct DemoSettings {
  index_t batch = 512;
  std::vector<int> sizes;
  std::vector<int> iterations;
  double scale = 4;
  Precision precision = Precision::float64;
  std::uint64_t seed = 0;
  ForwardSpec forward;
};

// Prints the header line, one table per (n, T) and the legend on stdout.
void run_demo(const DemoSettings& settings);

}  // namespace sinkgrad::cli
