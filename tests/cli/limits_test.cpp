// Numbers are checked in the type they are used in, with upper bounds (docs/cli.md, "What
// sinkgrad refuses"): a solver option, a definition value, an override, a CLI value or the
// environment's thread count that is out of range is refused naming the value as given, never
// wrapped into another one; and overrides are checked like the lines of a definition file.
// Each case through the real binary.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

class Limits : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rng = make_rng(50);
    write_grad_input(dir_.file("in.h5"), uniform_batch<double>(rng, 4, 3, 0.0, 4.0),
                     normal_batch<double>(rng, 4, 3));
    write_text(dir_.file("s.ini"),
               "[inputs]\nn = 3\nbatch = 2\nlogits = uniform(0, 4)\n[forward]\nT = 1\n"
               "[solvers]\nuse = cg_plain\n[run]\ndevices = cpu\n");
  }
  CliResult grad(std::vector<std::string> more) {
    std::vector<std::string> args{"grad", "-i",      dir_.file("in.h5"), "-o", dir_.file("out.h5"),
                                  "-s",   "cg_plain"};
    args.insert(args.end(), more.begin(), more.end());
    return run_cli(args);
  }
  CliResult run(std::vector<std::string> overrides) {
    std::vector<std::string> args{"run", dir_.file("s.ini")};
    args.insert(args.end(), overrides.begin(), overrides.end());
    args.insert(args.end(), {"-o", dir_.file("s.h5"), "--quiet"});
    return run_cli(args);
  }
  // Refused on the command line (exit 2), on one line naming `part`, nothing left behind.
  void expect_refused(const CliResult& result, const std::string& part) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_TRUE(contains(result.err, part)) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    std::vector<std::string> left = dir_.entries();
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"in.h5", "s.ini"})) << "a file was left behind";
  }
  ScratchDir dir_;
};

// 2^32 + 1 once ran one CG iteration; [2^31, 2^32) broke the output contract with a negative
// iteration count; 2^31 - 1 ran for ever.
TEST_F(Limits, SolverIntegerOptionsAreBoundedAndNeverWrapped) {
  for (const std::string value :
       {"4294967297", "3567587328", "2147483647", "1000001", "2**31", "99999999999999999999"}) {
    SCOPED_TRACE(value);
    expect_refused(grad({"--option", "max_iterations=" + value}), "'" + value + "'");
    expect_refused(grad({"--option", "max_iterations=" + value}), "from 1 to 1000000");
  }
  const CliResult ok = grad({"--option", "max_iterations=1000000"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(Limits, RealOptionsAreFiniteInFloat32) {
  expect_refused(grad({"--option", "tolerance=1e39"}), "'1e39'");
  expect_refused(grad({"--eps", "1e39"}), "finite in float32");
}

TEST_F(Limits, DefinitionAndOverrideValuesAreBounded) {
  expect_refused(run({"solver.cg_plain.max_iterations=4294967297"}), "'4294967297'");
  expect_refused(run({"measure.timing_repeats=4294967297"}), "'4294967297' is above 1000");
  expect_refused(run({"forward.T=2147483648"}), "2147483648");
  expect_refused(run({"inputs.batch=72057594037927936"}), "2^56");
}

TEST_F(Limits, CommandLineIntegersReportTheTrueValue) {
  expect_refused(grad({"-T", "2147483648"}), "2147483648");
  expect_refused(grad({"-T", "1000001"}), "must be <= 1000000");
  expect_refused(run_cli({"demo", "--sizes", "40000", "--batch", "1", "--iterations", "1"}),
                 "n must be <= 32768");
  expect_refused(run_cli({"demo", "--sizes", "4", "--batch", "1", "--iterations", "4294967297"}),
                 "4294967297");
}

// OMP_NUM_THREADS=100000 crashed libgomp in the first parallel region (SIGSEGV), leaving grad's
// temporary file; it is refused at startup, and --threads replaces it.
TEST_F(Limits, HugeOmpNumThreadsIsRefusedAtStartup) {
  ASSERT_EQ(::setenv("OMP_NUM_THREADS", "100000", 1), 0);
  const CliResult refused_grad = grad({});
  const CliResult refused_demo =
      run_cli({"demo", "--sizes", "4", "--batch", "4", "--iterations", "2"});
  expect_refused(refused_demo, "OMP_NUM_THREADS=100000");
  EXPECT_TRUE(contains(refused_grad.err, "above the 1024")) << refused_grad.err;
  expect_refused(refused_grad, "--threads N");
  const CliResult replaced = grad({"--threads", "2"});
  ASSERT_EQ(::setenv("OMP_NUM_THREADS", "2", 1), 0);
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
}

// A line break in an override once stored a definition that no longer parsed: the log could
// never be resumed. Overrides are lines of a definition: no control characters, no comment
// sign, each key once.
TEST_F(Limits, OverridesAreCheckedLikeDefinitionLines) {
  expect_refused(run({"study.name=a\n[run]\ndevices = cuda"}), "control character 0x0A");
  expect_refused(run({"study.name=\x1b[2Jx"}), "control character 0x1B");
  expect_refused(run({"study.name=a # b"}), "does not read back");
  expect_refused(run({"forward.T=1", "forward.T=2"}), "given twice on the command line");
  const CliResult ok = run({"study.name=fine", "forward.T=2"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace sinkgrad::testing
