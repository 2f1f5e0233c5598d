#pragma once
// A study definition: the sweep a researcher asks for, written as an INI file in
// Boost.Program_options' config-file syntax and checked completely before anything is
// computed. The format is documented in docs/experiments.md; in short:
//
//   [inputs]
//   n = 4, 8, 16
//   batch = 128
//   logits = uniform(0, 4), normal(2), near_permutation(6, 0.5), file(data/logits.h5, mhc_n4)
//   seed = 1, 2
//   [forward]
//   T = 1, 2, 5, 20
//   precision = float64
//   convention = columns_first, rows_first, tilekernels
//   eps = 1e-6                     # optional; each convention's default when absent
//   [solvers]
//   use = all                      # or a list: unrolled, cg_corrected
//   [solver.cg_corrected]
//   max_iterations = 2, 4, auto    # every option takes a list; the product is swept
//
// Every mistake (unknown section, key, solver or option; a value of the wrong type; an empty
// list) is a DefinitionError naming the key and what it accepts.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/forward_spec.hpp"
#include "core/solver_registry.hpp"
#include "core/types.hpp"
#include "experiments/study/definition_entries.hpp"
#include "io/hdf5_links.hpp"

namespace sinkgrad::study {

class DefinitionError : public Error {
 public:
  using Error::Error;
};

// Where the logits of one input come from.
struct LogitSource {
  enum class Kind { uniform, normal, near_permutation, file };
  Kind kind = Kind::uniform;
  // uniform: low, high; normal: scale (mean 0); near_permutation: scale, noise.
  double first = 0;
  double second = 0;
  std::string path;     // file: the path as resolved (relative to the definition's directory)
  std::string dataset;  // file: the (B, n, n) dataset in it
  std::string text;     // canonical spelling, part of every run's key: "uniform(0, 4)"
  // file: the other files its dataset reads through external links or a virtual dataset
  std::vector<h5::LinkedFile> linked;

  bool from_file() const { return kind == Kind::file; }
};

// One solver and the lists given for its options; the sweep takes their Cartesian product.
struct SolverSweep {
  std::string name;
  std::map<std::string, std::vector<std::string>> option_lists;
  // Every combination, each a complete key=value set accepted by the solver.
  std::vector<std::map<std::string, std::string>> option_sets;
};

struct StudyDefinition {
  std::string text;                    // the file's full text, as read
  std::vector<std::string> overrides;  // "section.key=value" as given on the command line
  Entries entries;                     // the parsed study after the overrides (its identity)
  std::string source_path;
  std::string name;
  std::string description;

  // [inputs]
  std::vector<int> sizes;  // n (not used by file sources, which carry their own n)
  index_t batch = 0;       // matrices per input (a file source uses its first `batch`)
  std::vector<LogitSource> logits;
  std::vector<std::uint64_t> seeds;
  // [forward]
  std::vector<int> iterations;  // T
  std::vector<Precision> precisions;
  std::vector<ForwardSpec> forwards;  // conventions x eps (each convention's default eps)
  // [solvers], [solver.NAME]
  std::vector<SolverSweep> solvers;
  // [run]
  std::vector<std::string> devices;  // "cpu", "cuda", "default" (cuda when usable, else cpu)
  // [references]
  double converged_tolerance = 1e-13;
  int converged_max_iterations = 16384;
  // [measure]
  bool iterate_errors = true;
  int timing_repeats = 3;
};

// Parses and checks a definition. base_directory resolves relative file(...) paths;
// source_name names the definition in messages. Each override "section.key=value" replaces
// (or adds) that key before the checks; an override naming an unknown key is refused.
StudyDefinition parse_definition(const std::string& text, const std::string& base_directory,
                                 const SolverRegistry& registry,
                                 const std::string& source_name = "<text>",
                                 const std::vector<std::string>& overrides = {});
// Reads the file, then parse_definition relative to its directory.
StudyDefinition read_definition(const std::string& path, const SolverRegistry& registry,
                                const std::vector<std::string>& overrides = {});

}  // namespace sinkgrad::study
