// `sinkgrad grad` on bad input: every mistake ends with a non-zero exit code, a message that
// names the problem, no output file, an existing output file left as it was, and no temporary
// file left behind.

#include <gtest/gtest.h>

#include <algorithm>

#include "core/solver_registry.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

constexpr int exit_failure = 1;  // bad input files
constexpr int exit_usage = 2;    // bad command line

class GradErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rng = make_rng(10);
    write_grad_input(dir_.file("good.h5"), uniform_batch<double>(rng, 5, 3, 0.0, 4.0),
                     normal_batch<double>(rng, 5, 3));
    inputs_ = {"good.h5"};
  }

  // Creates an input file holding the given datasets of zeros (float64 unless int32).
  void write_input(const std::string& name,
                   const std::vector<std::pair<std::string, std::vector<std::size_t>>>& datasets,
                   bool int32 = false) {
    const h5::File file = h5::File::create(dir_.file(name));
    for (const auto& [dataset, shape] : datasets) {
      std::size_t size = 1;
      for (std::size_t extent : shape) size *= extent;
      if (int32)
        h5::write_dataset<std::int32_t>(file, dataset, shape,
                                        std::vector<std::int32_t>(size).data());
      else
        h5::write_dataset<double>(file, dataset, shape, std::vector<double>(size).data());
    }
    inputs_.push_back(name);
  }

  // Runs grad with `args` (input and solver included) twice: without an output file, and with
  // an existing one. Both must fail with `exit_code` and a message containing every part.
  void expect_rejected(std::vector<std::string> args, int exit_code,
                       const std::vector<std::string>& message_parts) {
    const std::string output = dir_.file("out.h5");
    args.insert(args.begin(), {"grad", "--output", output});
    for (bool existing : {false, true}) {
      SCOPED_TRACE(existing ? "with an existing output file" : "without an output file");
      if (existing) write_text(output, "precious results");
      const CliResult run = run_cli(args);
      EXPECT_EQ(run.exit_code, exit_code) << run.err;
      for (const std::string& part : message_parts)
        EXPECT_NE(run.err.find(part), std::string::npos)
            << "expected '" << part << "' in the message: " << run.err;
      EXPECT_TRUE(run.out.empty()) << run.out;
      if (existing)
        EXPECT_EQ(read_text(output), "precious results");
      else
        EXPECT_FALSE(std::filesystem::exists(output));
      std::vector<std::string> expected = inputs_;
      if (existing) expected.push_back("out.h5");
      std::vector<std::string> found = dir_.entries();
      std::sort(expected.begin(), expected.end());
      std::sort(found.begin(), found.end());
      EXPECT_EQ(found, expected) << "a temporary file was left behind";
      std::filesystem::remove(output);
    }
  }

  std::string file(const std::string& name) const { return dir_.file(name); }
  // Records a file made by the test itself as expected in the directory.
  void track(const std::string& name) { inputs_.push_back(name); }

 private:
  ScratchDir dir_;
  std::vector<std::string> inputs_;
};

TEST_F(GradErrors, MissingInputFile) {
  expect_rejected({"--input", file("nowhere.h5"), "--solver", "unrolled"}, exit_failure,
                  {"nowhere.h5", "does not exist"});
}

TEST_F(GradErrors, InputIsNotHdf5) {
  write_text(file("text.h5"), "logits,grad_output\n1,2\n");
  track("text.h5");
  expect_rejected({"--input", file("text.h5"), "--solver", "unrolled"}, exit_failure,
                  {"text.h5", "is not an HDF5 file"});
}

TEST_F(GradErrors, MissingDataset) {
  write_input("no_grad.h5", {{"logits", {2, 3, 3}}});
  expect_rejected({"--input", file("no_grad.h5"), "--solver", "cg_plain"}, exit_failure,
                  {"no_grad.h5", "'/grad_output' is missing", "logits"});
}

TEST_F(GradErrors, WrongRank) {
  write_input("rank2.h5", {{"logits", {3, 3}}, {"grad_output", {2, 3, 3}}});
  expect_rejected({"--input", file("rank2.h5"), "--solver", "cg_plain"}, exit_failure,
                  {"rank2.h5", "'/logits'", "rank 2", "(B, n, n)"});
}

TEST_F(GradErrors, NonSquareMatrices) {
  write_input("nonsquare.h5", {{"logits", {2, 3, 4}}, {"grad_output", {2, 3, 4}}});
  expect_rejected({"--input", file("nonsquare.h5"), "--solver", "direct"}, exit_failure,
                  {"nonsquare.h5", "'/logits'", "(2, 3, 4)", "not square"});
}

TEST_F(GradErrors, EmptyMatrices) {
  write_input("empty.h5", {{"logits", {2, 0, 0}}, {"grad_output", {2, 0, 0}}});
  expect_rejected({"--input", file("empty.h5"), "--solver", "direct"}, exit_failure,
                  {"empty.h5", "n must be >= 1"});
}

TEST_F(GradErrors, ShapeMismatch) {
  write_input("sizes.h5", {{"logits", {4, 3, 3}}, {"grad_output", {4, 5, 5}}});
  expect_rejected({"--input", file("sizes.h5"), "--solver", "cg_corrected"}, exit_failure,
                  {"sizes.h5", "(4, 3, 3)", "(4, 5, 5)", "same shape"});
  write_input("batches.h5", {{"logits", {4, 3, 3}}, {"grad_output", {6, 3, 3}}});
  expect_rejected({"--input", file("batches.h5"), "--solver", "cg_corrected"}, exit_failure,
                  {"batches.h5", "(4, 3, 3)", "(6, 3, 3)", "same shape"});
}

TEST_F(GradErrors, UnsupportedElementType) {
  write_input("ints.h5", {{"logits", {2, 3, 3}}, {"grad_output", {2, 3, 3}}}, true);
  expect_rejected({"--input", file("ints.h5"), "--solver", "unrolled"}, exit_failure,
                  {"ints.h5", "'/logits'", "int32", "float32 or float64"});
}

TEST_F(GradErrors, DatasetIsAGroup) {
  {
    const h5::File f = h5::File::create(file("group.h5"));
    f.create_group("logits");
    h5::write_dataset<double>(f, "grad_output", {1, 2, 2}, std::vector<double>(4).data());
  }
  track("group.h5");
  expect_rejected({"--input", file("group.h5"), "--solver", "unrolled"}, exit_failure,
                  {"group.h5", "'/logits'", "is not a dataset"});
}

TEST_F(GradErrors, UnknownSolver) {
  expect_rejected({"--input", file("good.h5"), "--solver", "newton"}, exit_usage,
                  {"unknown solver 'newton'", "cg_corrected", "unrolled"});
}

TEST_F(GradErrors, UnknownOption) {
  expect_rejected(
      {"--input", file("good.h5"), "--solver", "cg_corrected", "--option", "restarts=3"},
      exit_usage, {"no option 'restarts'", "max_iterations", "tolerance"});
}

TEST_F(GradErrors, BadOptionValues) {
  expect_rejected(
      {"--input", file("good.h5"), "--solver", "cg_plain", "--option", "max_iterations=0"},
      exit_usage, {"max_iterations", "'0' is not an integer from 1 to 1000000"});
  expect_rejected(
      {"--input", file("good.h5"), "--solver", "cg_plain", "--option", "tolerance=small"},
      exit_usage, {"tolerance", "'small'"});
  expect_rejected({"--input", file("good.h5"), "--solver", "direct", "--option", "system=lu"},
                  exit_usage, {"system", "'lu'", "corrected, plain"});
  expect_rejected({"--input", file("good.h5"), "--solver", "direct", "--option", "system"},
                  exit_usage, {"'system'", "key=value"});
  expect_rejected({"--input", file("good.h5"), "--solver", "direct", "--option", "system=plain",
                   "--option", "system=corrected"},
                  exit_usage, {"system", "more than once"});
}

TEST_F(GradErrors, BadDtype) {
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--dtype", "float16"},
                  exit_usage, {"float16", "float32 or float64"});
}

TEST_F(GradErrors, BadDevice) {
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--device", "tpu"},
                  exit_usage, {"tpu", "cpu or cuda"});
}

TEST_F(GradErrors, CudaWithoutACudaVariant) {
  if (SolverRegistry::global().info("unrolled").supports(Device::cuda))
    GTEST_SKIP() << "this build has CUDA variants";
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--device", "cuda"},
                  exit_usage, {"'unrolled'", "does not run on cuda", "cpu"});
}

TEST_F(GradErrors, ZeroOrNegativeIterations) {
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--iterations", "0"},
                  exit_usage, {"--iterations", ">= 1", "got 0"});
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--iterations=-3"},
                  exit_usage, {"--iterations", "got -3"});
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--iterations", "ten"},
                  exit_usage, {"iterations", "ten"});
}

TEST_F(GradErrors, MissingRequiredOptionsAndUnknownFlags) {
  expect_rejected({"--solver", "unrolled"}, exit_usage, {"--input", "required"});
  expect_rejected({"--input", file("good.h5")}, exit_usage, {"--solver", "required"});
  expect_rejected({"--input", file("good.h5"), "--solver", "unrolled", "--fast"}, exit_usage,
                  {"--fast"});
}

TEST_F(GradErrors, OutputDirectoryMissing) {
  const CliResult run =
      run_cli({"grad", "-i", file("good.h5"), "-o", file("no/such/dir/out.h5"), "-s", "unrolled"});
  EXPECT_EQ(run.exit_code, exit_failure);
  EXPECT_NE(run.err.find("does not exist"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace sinkgrad::testing
