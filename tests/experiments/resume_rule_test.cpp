// The rule for an existing log (docs/experiments.md, "An existing log"): --resume with a widened
// sweep runs exactly the missing runs, and the log then equals a clean run of the wide sweep.
// Through the real binary.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/experiments/study_test_support.hpp"

namespace sinkgrad::study {
namespace {

using sinkgrad::testing::run_cli;
using sinkgrad::testing::ScratchDir;
using sinkgrad::testing::write_text;
using testing::contains;
using testing::runs_of;
using testing::tiny;

// The numbers of a run that do not depend on timing.
std::vector<double> results_of(const h5::Group& run) {
  std::vector<double> values;
  for (const char* name : {"error_vs_unrolled", "error_vs_converged"}) {
    const h5::Group metrics = run.open_group(name);
    for (const double x : h5::read_vector<double>(metrics, "frobenius")) values.push_back(x);
    values.push_back(h5::read_double_attribute(metrics, "max_abs"));
  }
  values.push_back(h5::read_double_attribute(run, "forward_violation_max"));
  return values;
}

TEST(StudyResume, AWidenedSweepRunsExactlyTheMissingRunsAndEqualsACleanRun) {
  const ScratchDir dir;
  const std::string definition = dir.file("tiny.ini");
  write_text(definition, tiny);
  const std::string log = dir.file("grown.h5"), clean = dir.file("clean.h5");
  auto result = run_cli({"run", definition, "--output", log, "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // T widened from 1, 2 to 2, 1, 5 (another order) and n from 3 to 3, 4: 4 runs become 12.
  const std::vector<std::string> wide = {"forward.T=2,1,5", "inputs.n=4,3"};
  std::vector<std::string> args = {"run", definition};
  args.insert(args.end(), wide.begin(), wide.end());
  for (const std::string& extra :
       {std::string("--output"), log, std::string("--resume"), std::string("--quiet")})
    args.push_back(extra);
  result = run_cli(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "12 runs (4 already in the log, 8 run now, 0 left)"))
      << result.out;
  args = {"run", definition, wide[0], wide[1], "--output", clean, "--quiet"};
  ASSERT_EQ(run_cli(args).exit_code, 0);

  const h5::File grown_log = h5::File::open(log), clean_log = h5::File::open(clean);
  // The log now records the wider study, so the same command resumes it as complete.
  EXPECT_EQ(h5::read_string_attribute(grown_log, "study"),
            h5::read_string_attribute(clean_log, "study"));
  const auto grown = runs_of(grown_log), reference = runs_of(clean_log);
  ASSERT_EQ(grown.size(), 12u);
  ASSERT_EQ(reference.size(), 12u);
  for (const auto& [key, run] : reference) {
    ASSERT_EQ(grown.count(key), 1u) << key;
    EXPECT_EQ(results_of(grown.at(key)), results_of(run)) << key;
  }
}

}  // namespace
}  // namespace sinkgrad::study
