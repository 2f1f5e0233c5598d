// `sinkgrad run` as the real binary: runs the smoke study, stops after --max-runs and resumes,
// refuses a wrong definition before creating anything (exit code 2), stays quiet on stderr with
// --quiet.

#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/study/study_runner.hpp"
#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/experiments/study_test_support.hpp"

namespace sinkgrad::study {
namespace {

using sinkgrad::testing::run_cli;
using sinkgrad::testing::ScratchDir;
using sinkgrad::testing::write_text;
using testing::contains;

const std::string smoke_path = std::string(SINKGRAD_SOURCE_DIR) + "/experiments/smoke.ini";

std::size_t finished_runs(const std::string& path) {
  const h5::File log = h5::File::open(path);
  return log.open_group("runs").children().size();
}

TEST(RunCommand, StopsAfterMaxRunsAndResumes) {
  const ScratchDir dir;
  const std::string log = dir.file("smoke.h5");
  auto result = run_cli(
      {"run", smoke_path, "--output", log, "--device", "cpu", "--max-runs", "9", "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "9 run now")) << result.out;
  EXPECT_TRUE(contains(result.out, "--resume")) << result.out;
  EXPECT_EQ(result.err, "") << "--quiet: no progress lines";
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

TEST(RunCommand, InterruptStopsAfterTheRunInProgressAndResumes) {
  const ScratchDir dir;
  const std::string definition = dir.file("long.ini");
  write_text(definition,
             "[inputs]\nn = 8, 16\nbatch = 1024\nlogits = uniform(0, 4), uniform(0, 10)\n"
             "[forward]\nT = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\n[solvers]\nuse = all\n"
             "[solver.cg_corrected]\nmax_iterations = 8, 16, 32\ntolerance = 0\n"
             "[run]\ndevices = cpu\n");
  const std::string log = dir.file("long.h5");
  // SIGINT half a second after the log appears (the handler is installed before it is made).
  const std::string script = sinkgrad::testing::shell_quoted(SINKGRAD_CLI_PATH) + " run " +
                             sinkgrad::testing::shell_quoted(definition) + " --output " +
                             sinkgrad::testing::shell_quoted(log) + " > " + dir.file("out") +
                             " 2>&1 & pid=$!; i=0; " + "while [ ! -s " + log +
                             " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; " +
                             "sleep 0.5; kill -INT $pid; wait $pid; echo $? > " + dir.file("code");
  ASSERT_EQ(std::system(("sh -c " + sinkgrad::testing::shell_quoted(script)).c_str()), 0);
  const std::string code = sinkgrad::testing::read_text(dir.file("code"));
  const std::string out = sinkgrad::testing::read_text(dir.file("out"));
  if (code == "0\n") GTEST_SKIP() << "the sweep finished before the signal: " << out;
  ASSERT_EQ(code, "130\n") << out;
  EXPECT_TRUE(contains(out, "stopped by a signal")) << out;
  const std::size_t kept = finished_runs(log);
  EXPECT_GT(kept, 0u) << out;

  const auto result = run_cli({"run", definition, "--output", log, "--resume"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, std::to_string(kept) + " already in the log")) << result.out;
  EXPECT_EQ(finished_runs(log), 280u);  // 40 points x 7 solver configurations
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

}  // namespace
}  // namespace sinkgrad::study
