// Plugin solvers are outside code: whatever they throw or return, `grad` and `run` end with a
// one-line message naming the solver (and the run), exit code 1, and nothing left behind; a
// NaN gradient reported as ok is counted as breakdown. The plugin is
// tests/plugins/hostile/hostile_plugin.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

class HostilePlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rng = make_rng(4);
    write_grad_input(dir_.file("in.h5"), uniform_batch<double>(rng, 3, 3, 0.0, 4.0),
                     normal_batch<double>(rng, 3, 3));
  }
  CliResult grad(const std::string& solver, const std::string& mode) {
    std::vector<std::string> args{"grad",
                                  "--plugin",
                                  SINKGRAD_TEST_HOSTILE_PLUGIN,
                                  "-i",
                                  dir_.file("in.h5"),
                                  "-o",
                                  dir_.file("out.h5"),
                                  "-s",
                                  solver};
    if (!mode.empty()) args.insert(args.end(), {"--option", "mode=" + mode});
    return run_cli(args);
  }
  void expect_failed_cleanly(const CliResult& run, int code, const std::string& part) {
    EXPECT_EQ(run.exit_code, code) << run.err;
    EXPECT_TRUE(contains(run.err, part)) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(dir_.entries(), std::vector<std::string>{"in.h5"}) << "output or temporary file left";
  }
  ScratchDir dir_;
};

TEST_F(HostilePlugin, ExceptionsBecomeMessagesNamingTheSolver) {
  expect_failed_cleanly(grad("hostile_test", "throw_int"), 1, "solver 'hostile_test' (input '");
  expect_failed_cleanly(grad("hostile_test", "throw_int"), 1, "not a std::exception");
  expect_failed_cleanly(grad("hostile_test", "throw_std"), 1, "hostile solver gave up");
}

TEST_F(HostilePlugin, BrokenOutputContractIsAnError) {
  expect_failed_cleanly(grad("hostile_test", "bad_status"), 1, "matrix 0 has status code 7");
  expect_failed_cleanly(grad("hostile_test", "negative_iterations"), 1,
                        "matrix 0 reports -3 iterations");
  expect_failed_cleanly(grad("hostile_test", "writes_nothing"), 1,
                        "it did not write the status of matrix 0");
  expect_failed_cleanly(grad("hostile_null_test", ""), 2, "its factory returned null");
}

TEST_F(HostilePlugin, NanGradientIsNeverCountedOk) {
  const CliResult run = grad("hostile_test", "nan_ok");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "ok 0, not_converged 0, breakdown 3")) << run.out;
  const h5::File out = h5::File::open(dir_.file("out.h5"));
  std::vector<std::int32_t> status(3);
  h5::Dataset::open(out, "status").read_into(status.data());
  EXPECT_EQ(status, (std::vector<std::int32_t>{2, 2, 2}));
}

// In `run`, a failing run is reported with its run and solver, recorded in the log as failed,
// and the sweep goes on; --stop-on-error stops at it.
TEST_F(HostilePlugin, RunRecordsAFailedRunAndGoesOn) {
  write_text(dir_.file("s.ini"),
             "[inputs]\nn = 3\nbatch = 2\nlogits = uniform(0, 4)\n[forward]\nT = 1, 2\n"
             "[solvers]\nuse = hostile_test, unrolled\n[solver.hostile_test]\nmode = throw_int\n"
             "[run]\ndevices = cpu\n[measure]\ntiming_repeats = 1\n");
  const std::string log = dir_.file("s.h5");
  CliResult run =
      run_cli({"run", "--plugin", SINKGRAD_TEST_HOSTILE_PLUGIN, dir_.file("s.ini"), "-o", log});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  // One line per failed run (the progress lines of a run without a terminal come between).
  std::size_t failure_lines = 0;
  for (std::size_t at = run.err.find(") failed: "); at != std::string::npos;
       at = run.err.find(") failed: ", at + 1))
    ++failure_lines;
  EXPECT_EQ(failure_lines, 2u) << run.err;
  EXPECT_TRUE(contains(run.err, "hostile_test")) << run.err;
  EXPECT_TRUE(contains(run.err, "T=2")) << run.err;
  EXPECT_TRUE(contains(run.out, "2 run(s) failed")) << run.out;
  {
    const h5::File file = h5::File::open(log);
    const h5::Group runs = file.open_group("runs");
    int failed = 0, complete = 0;
    for (const std::string& id : runs.children()) {
      const h5::Group group = runs.open_group(id);
      if (h5::has_attribute(group, "failed")) {
        ++failed;
        EXPECT_TRUE(contains(h5::read_string_attribute(group, "error"), "not a std::exception"));
      } else if (h5::read_int_attribute(group, "complete") == 1) {
        ++complete;
      }
    }
    EXPECT_EQ(failed, 2);
    EXPECT_EQ(complete, 2) << "the unrolled runs are done despite the failures";
  }
  std::filesystem::remove(log);
  run = run_cli({"run", "--plugin", SINKGRAD_TEST_HOSTILE_PLUGIN, dir_.file("s.ini"), "-o", log,
                 "--stop-on-error"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.out, "stopped by --stop-on-error")) << run.out;
  EXPECT_TRUE(contains(run.out, "0 run now")) << run.out;
}

}  // namespace
}  // namespace sinkgrad::testing
