// `sinkgrad run` as the real binary: runs the smoke study, stops after --max-runs and resumes,
// refuses a wrong definition before creating anything (exit code 2), stays quiet on stderr when
// it is not a terminal.

#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/io/hdf5.hpp"
#include "experiments/study/study_runner.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::study {
namespace {

using sinkgrad::testing::run_cli;
using sinkgrad::testing::ScratchDir;
using sinkgrad::testing::write_text;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string smoke_path = std::string(SINKGRAD_SOURCE_DIR) + "/experiments/smoke.ini";

std::size_t finished_runs(const std::string& path) {
  const h5::File log = h5::File::open(path);
  return log.open_group("runs").children().size();
}

TEST(RunCommand, StopsAfterMaxRunsAndResumes) {
  const ScratchDir dir;
  const std::string log = dir.file("smoke.h5");
  auto result = run_cli({"run", smoke_path, "--output", log, "--device", "cpu", "--max-runs", "9"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "9 run now")) << result.out;
  EXPECT_TRUE(contains(result.out, "--resume")) << result.out;
  EXPECT_EQ(result.err, "") << "no progress line when stderr is not a terminal";
  EXPECT_EQ(finished_runs(log), 9u);

  result = run_cli({"run", smoke_path, "--output", log, "--device", "cpu"});
  EXPECT_EQ(result.exit_code, 1) << "an existing log needs --resume";
  EXPECT_TRUE(contains(result.err, "--resume")) << result.err;

  result = run_cli({"run", smoke_path, "--output", log, "--device", "cpu", "--resume"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "9 already in the log")) << result.out;
  EXPECT_TRUE(contains(result.out, "0 left")) << result.out;
  const std::size_t total = finished_runs(log);
  EXPECT_GT(total, 9u);

  result = run_cli({"run", smoke_path, "--output", log, "--device", "cpu", "--resume"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "0 run now")) << result.out;
  EXPECT_EQ(finished_runs(log), total);
}

TEST(RunCommand, WrongDefinitionIsRejectedBeforeAnythingIsWritten) {
  const ScratchDir dir;
  const std::string definition = dir.file("bad.ini");
  write_text(definition,
             "[inputs]\nn = 4\nbatch = 2\nlogits = uniform(0, 4)\n[forward]\nT = 2\n"
             "[solvers]\nuse = cg_corrected\n[solver.cg_corrected]\nmax_iter = 3\n");
  const std::string log = dir.file("bad.h5");
  const auto result = run_cli({"run", definition, "--output", log});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "[solver.cg_corrected] max_iter")) << result.err;
  EXPECT_TRUE(contains(result.err, "max_iterations")) << result.err;
  EXPECT_FALSE(std::filesystem::exists(log));

  const auto missing = run_cli({"run", dir.file("none.ini")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "none.ini")) << missing.err;
}

TEST(RunCommand, CudaWithoutAGpuIsRefusedUpFront) {
  try {
    resolve_devices({"cuda"});
    GTEST_SKIP() << "a GPU is usable here";
  } catch (const DefinitionError&) {
  }
  const ScratchDir dir;
  const std::string log = dir.file("cuda.h5");
  const auto result = run_cli({"run", smoke_path, "--output", log, "--device", "cuda"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "no GPU is usable")) << result.err;
  EXPECT_FALSE(std::filesystem::exists(log));
}

TEST(RunCommand, DefaultOutputIsNextToTheDefinition) {
  const ScratchDir dir;
  const std::string definition = dir.file("tiny.ini");
  write_text(definition,
             "[inputs]\nn = 3\nbatch = 2\nlogits = normal(1)\n[forward]\nT = 1\n"
             "[solvers]\nuse = direct\n[run]\ndevices = cpu\n");
  const auto result = run_cli({"run", definition});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(finished_runs(dir.file("tiny.h5")), 1u);
}

}  // namespace
}  // namespace sinkgrad::study
