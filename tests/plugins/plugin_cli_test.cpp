// The example plugin through the real `sinkgrad` binary: listed by `solvers` (with --plugin and
// with SINKGRAD_PLUGIN_PATH), run by `grad` with exactly the library's numbers, and every
// refusal reported as an error with exit code 1 naming the file.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#if defined(SINKGRAD_WITH_CUDA)
#include "kernels/cuda/device_memory.hpp"
#endif

#include "core/plugin_loader.hpp"
#include "core/solver_registry.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

const std::string example_plugin = SINKGRAD_TEST_EXAMPLE_PLUGIN;

TEST(PluginCli, SolversListsThePluginSolverWithItsOption) {
  const CliResult listed = run_cli({"solvers", "--plugin", example_plugin});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(contains(listed.out, "truncated_unrolled\n")) << listed.out;
  EXPECT_TRUE(contains(listed.out, "k (default 1; an integer from 1 to 1000000)")) << listed.out;
  EXPECT_TRUE(contains(listed.out, "unrolled\n")) << listed.out;  // built-ins stay

  const CliResult without = run_cli({"solvers", "--names"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_FALSE(contains(without.out, "truncated_unrolled")) << without.out;
}

TEST(PluginCli, SinkgradPluginPathLoadsForEveryCommand) {
  const std::string directory = example_plugin.substr(0, example_plugin.rfind('/'));
  ASSERT_EQ(setenv(plugin_path_variable, directory.c_str(), 1), 0);
  const CliResult listed = run_cli({"solvers", "--names"});
  // The same file given again on the command line is loaded once, not refused as a clash.
  const CliResult both = run_cli({"solvers", "--names", "--plugin", example_plugin});
  unsetenv(plugin_path_variable);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(contains(listed.out, "truncated_unrolled\n")) << listed.out;
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_TRUE(contains(both.out, "truncated_unrolled\n")) << both.out;
}

template <class Real>
void expect_grad_matches_library(const std::string& device) {
  auto rng = make_rng(11);
  const index_t B = 200;
  const int n = 6, T = 8;
  const auto M = normal_batch<Real>(rng, B, n, 1.5);
  const auto G = normal_batch<Real>(rng, B, n);
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), M, G);
  const CliResult result =
      run_cli({"grad", "--plugin", example_plugin, "--input", dir.file("in.h5"), "--output",
               dir.file("out.h5"), "--solver", "truncated_unrolled", "--iterations",
               std::to_string(T), "--option", "k=3", "--device", device});
  ASSERT_EQ(result.exit_code, 0) << result.err;

  load_plugin(example_plugin);
  const auto solver = SolverRegistry::global().create("truncated_unrolled", {{"k", "3"}});
  const HostBatch<Real> R = forward(M, T);
  HostBatch<Real> expected(B, n);
  std::vector<SolveStatus> status(static_cast<size_t>(B));
  std::vector<std::int32_t> iterations(static_cast<size_t>(B));
  solver->solve(BackwardProblem<Real>{M.view(), R.view(), G.view(), T},
                BackwardResult<Real>{expected.view(), status.data(), iterations.data()});

  const h5::File out = h5::File::open(dir.file("out.h5"));
  EXPECT_EQ(h5::read_string_attribute(out, "solver"), "truncated_unrolled");
  EXPECT_EQ(h5::read_string_attribute(out, "options"), "k=3");
  const HostBatch<Real> written = h5::read_batch<Real>(out, "grad_logits");
  const auto written_status = h5::read_vector<std::int32_t>(out, "status");
  const auto written_iterations = h5::read_vector<std::int32_t>(out, "iterations");
  const double tolerance = device == "cpu" ? 0.0 : (std::is_same_v<Real, float> ? 1e-5 : 1e-13);
  for (index_t b = 0; b < B; ++b) {
    EXPECT_EQ(written_status[b], static_cast<std::int32_t>(status[b]));
    EXPECT_EQ(written_iterations[b], 3);
    for (int e = 0; e < n * n; ++e) {
      const double want = expected.data()[b * n * n + e];
      EXPECT_NEAR(written.data()[b * n * n + e], want, tolerance * (1 + std::abs(want)))
          << "b=" << b << " e=" << e;
    }
  }
}

TEST(PluginCli, GradWritesTheLibrarysGradient) {
  expect_grad_matches_library<double>("cpu");
  expect_grad_matches_library<float>("cpu");
}

#if defined(SINKGRAD_WITH_CUDA)
TEST(PluginCli, GradOnCudaRunsThePluginsCudaVariant) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_grad_matches_library<double>("cuda");
  expect_grad_matches_library<float>("cuda");
}
#endif

TEST(PluginCli, PluginOptionsAreValidatedLikeBuiltIns) {
  const CliResult result =
      run_cli({"grad", "--plugin", example_plugin, "--input", "in.h5", "--output", "out.h5",
               "--solver", "truncated_unrolled", "--option", "depth=2"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.err, "solver 'truncated_unrolled' has no option 'depth'"))
      << result.err;
}

// Every refusal: exit code 1, the file and the reason on stderr, nothing on stdout.
void expect_refusal(const std::string& plugin, const std::string& reason) {
  const CliResult result = run_cli({"solvers", "--plugin", plugin});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_TRUE(contains(result.err, "sinkgrad solvers: error: plugin '")) << result.err;
  EXPECT_TRUE(contains(result.err, reason)) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

TEST(PluginCli, RefusesEachBadPluginWithAClearMessage) {
  const ScratchDir dir;
  write_text(dir.file("libnotes.so"), "text, not a library\n");
  expect_refusal(dir.file("missing.so"), "no such file");
  expect_refusal(dir.file("libnotes.so"), "is not a shared library");
  expect_refusal(SINKGRAD_TEST_NO_ENTRY_POINT_PLUGIN,
                 "is a shared library but not a sinkgrad plugin");
  expect_refusal(SINKGRAD_TEST_ABI_MISMATCH_PLUGIN, "was built for sinkgrad plugin ABI version");
  expect_refusal(SINKGRAD_TEST_NAME_CLASH_PLUGIN,
                 "registers a solver named 'unrolled', but that name is already taken by a "
                 "built-in solver");
  expect_refusal(SINKGRAD_TEST_FAILING_PLUGIN, "failed to register its solvers");
}

TEST(PluginCli, TwoPluginsWithOneNameAreRefusedNamingBoth) {
  const ScratchDir dir;
  const std::string copy = dir.file("libtruncated_unrolled_copy.so");
  std::filesystem::copy_file(example_plugin, copy);
  const CliResult result = run_cli({"solvers", "--plugin", example_plugin, "--plugin", copy});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.err,
                       "'truncated_unrolled', but that name is already taken by "
                       "plugin '" +
                           std::filesystem::canonical(example_plugin).string()))
      << result.err;
}

}  // namespace
}  // namespace sinkgrad::testing
