// A study over forward conventions, run end to end: every run records its convention and eps,
// its references are those of its own forward (unrolled scores 0 against its own, and the
// T-step references of two conventions differ), and at a converged tilekernels forward the
// implicit gradients' error against unrolled grows with eps (the floor docs/math.md predicts).

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/solver_registry.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/study_runner.hpp"
#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::study {
namespace {

using sinkgrad::testing::ScratchDir;

const std::string definition_text = R"([study]
name = forwards_test
[inputs]
n = 5
batch = 6
logits = uniform(0, 4)
[forward]
T = 2, 150
convention = rows_first, tilekernels
eps = 1e-8, 1e-2
[solvers]
use = unrolled, cg_corrected
[measure]
iterate_errors = false
timing_repeats = 1
)";

TEST(ForwardsStudy, RunsRecordTheirForwardAndUseItsReferences) {
  const ScratchDir dir;
  const StudyDefinition definition =
      parse_definition(definition_text, SINKGRAD_SOURCE_DIR, SolverRegistry::global(), "t.ini");
  RunnerOptions options;
  options.output = dir.file("forwards.h5");
  options.devices = {"cpu"};
  options.tool_version = "test";
  const RunnerSummary summary = run_study(definition, options);
  EXPECT_EQ(summary.total, 2u * 4u * 2u);

  const h5::File log = h5::File::open(options.output);
  const h5::Group runs = log.open_group("runs");
  std::map<std::string, double> error;  // "solver convention eps T" -> median error
  for (const std::string& id : runs.children()) {
    const h5::Group run = runs.open_group(id);
    const std::string convention = h5::read_string_attribute(run, "forward");
    const double eps = h5::read_double_attribute(run, "eps");
    EXPECT_TRUE(convention == "rows_first" || convention == "tilekernels") << convention;
    EXPECT_TRUE(eps == 1e-8 || eps == 1e-2) << eps;
    const std::string key = h5::read_string_attribute(run, "key");
    EXPECT_NE(key.find(" forward=" + convention + " eps="), std::string::npos) << key;
    const double median =
        h5::read_double_attribute(run.open_group("error_vs_unrolled"), "frobenius_median");
    error[h5::read_string_attribute(run, "solver") + " " + convention + " " + std::to_string(eps) +
          " " + std::to_string(h5::read_int_attribute(run, "T"))] = median;
  }
  ASSERT_EQ(error.size(), 16u);
  for (const auto& [name, value] : error)
    if (name.rfind("unrolled", 0) == 0) {
      EXPECT_EQ(value, 0.0) << name;
    }
  // At T = 150 the forward has converged: cg_corrected's gradient, carried from log B to M under
  // tilekernels' softmax_rows(M) + eps (core/log_base_chain.hpp), is the exact one at every eps
  // (uncarried it kept a floor that grew with eps: above 1e-4 at eps = 1e-2).
  for (const double eps : {1e-8, 1e-2}) {
    EXPECT_LT(error.at("cg_corrected tilekernels " + std::to_string(eps) + " 150"), 1e-10) << eps;
    EXPECT_LT(error.at("cg_corrected rows_first " + std::to_string(eps) + " 150"), 1e-10) << eps;
  }
}

}  // namespace
}  // namespace sinkgrad::study
