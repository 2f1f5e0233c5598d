// `sinkgrad grad --forward NAME [--eps X]` and `sinkgrad demo --forward NAME`, run as the real
// binary: R and the unrolled gradient in the output file against the direct implementation of
// each convention's formula (tests/support/convention_reference.hpp), the convention recorded
// in the file, and bad names and eps values refused before any file is written.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cli/cli_test_support.hpp"
#include "tests/support/convention_reference.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

struct ForwardCase {
  std::string convention;
  std::optional<std::string> eps;  // as given on the command line
  double eps_used;
};

TEST(ForwardOption, GradComputesAndRecordsEachConvention) {
  auto rng = make_rng(1650);
  const int n = 5, T = 3;
  const index_t B = 4;
  const auto M = normal_batch<double>(rng, B, n, 1.5);
  const auto G = normal_batch<double>(rng, B, n, 1.0);
  const std::vector<ForwardCase> cases{{"columns_first", std::nullopt, 0.0},
                                       {"rows_first", std::nullopt, 0.0},
                                       {"rows_first", "1e-3", 1e-3},
                                       {"tilekernels", "1e-6", 1e-6},
                                       {"tilekernels", std::nullopt, 1e-6}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.convention + " eps " + c.eps.value_or("(default)"));
    const ScratchDir dir;
    write_grad_input(dir.file("in.h5"), M, G);
    std::vector<std::string> args{
        "grad",     "--input",      dir.file("in.h5"), "--output",  dir.file("out.h5"), "--solver",
        "unrolled", "--iterations", std::to_string(T), "--forward", c.convention};
    if (c.eps) {
      args.push_back("--eps");
      args.push_back(*c.eps);
    }
    const CliResult run = run_cli(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.out.find("forward " + c.convention), std::string::npos) << run.out;
    const h5::File out = h5::File::open(dir.file("out.h5"));
    EXPECT_EQ(h5::read_string_attribute(out, "forward"), c.convention);
    EXPECT_EQ(h5::read_double_attribute(out, "eps"), c.eps_used);
    const auto R = h5::Dataset::open(out, "R").read<double>();
    const auto grad = h5::Dataset::open(out, "grad_logits").read<double>();
    const auto status = h5::read_vector<std::int32_t>(out, "status");
    const int nn = n * n;
    for (index_t b = 0; b < B; ++b) {
      EXPECT_EQ(status[static_cast<size_t>(b)], 0);
      const Square M_b = widen(M.data() + b * nn, n), G_b = widen(G.data() + b * nn, n);
      const Square R_ref = convention_forward_reference(M_b, n, T, c.convention, c.eps_used);
      const Square g_ref = convention_unrolled_reference(M_b, G_b, n, T, c.convention, c.eps_used);
      Wide scale = 0;
      for (int k = 0; k < nn; ++k) scale = std::max(scale, std::fabs(g_ref[k]));
      for (int k = 0; k < nn; ++k) {
        EXPECT_NEAR(R[b * nn + k], static_cast<double>(R_ref[k]), 1e-14);
        EXPECT_NEAR(grad[b * nn + k], static_cast<double>(g_ref[k]),
                    1e-10 * static_cast<double>(scale));
      }
    }
  }
}

TEST(ForwardOption, BadConventionsAndEpsAreRefused) {
  auto rng = make_rng(1651);
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), normal_batch<double>(rng, 2, 3),
                   normal_batch<double>(rng, 2, 3));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--forward", "sinkhorn"},
       "unknown forward convention 'sinkhorn' (use columns_first, rows_first, tilekernels, "
       "megatron_main, magi2, mhc_triton, maxtext, megatron_dev)"},
      {{"--forward", "rows_first", "--eps", "-1e-6"}, "eps must be finite and >= 0"},
      {{"--forward", "tilekernels", "--eps", "nan"}, "eps must be finite and >= 0"},
      {{"--eps", "inf"}, "eps must be finite and >= 0"},
      // An eps that would be read as 0 is not silently the convention without eps.
      {{"--forward", "tilekernels", "--eps", "1e-400"}, "'1e-400' is beyond a double's range"},
      {{"--eps", "1e-6x"}, "--eps: '1e-6x' is not a number"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args{"grad",     "--input",          dir.file("in.h5"),
                                  "--output", dir.file("out.h5"), "--solver",
                                  "unrolled"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult run = run_cli(args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.h5")));
  }
  const CliResult demo = run_cli({"demo", "--forward", "rows-first"});
  EXPECT_EQ(demo.exit_code, 2);
  EXPECT_NE(demo.err.find("unknown forward convention 'rows-first'"), std::string::npos)
      << demo.err;
}

TEST(ForwardOption, DemoRunsEachConvention) {
  for (const std::string convention : {"rows_first", "tilekernels"}) {
    const CliResult run = run_cli({"demo", "--forward", convention, "--batch", "8", "--sizes", "4",
                                   "--iterations", "3", "--seed", "1"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.out.find("forward " + convention), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("max|r - 1|"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("cg_corrected"), std::string::npos) << run.out;
  }
}

// The presets of other projects and the aliases: accepted by name, recorded as the preset with
// its default eps (an alias gives its preset's bits), and listed with their formulas by --help.
TEST(ForwardOption, GradTakesEveryPresetAndAlias) {
  auto rng = make_rng(1652);
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), normal_batch<double>(rng, 3, 4, 4.0),
                   normal_batch<double>(rng, 3, 4));
  const auto grad = [&](const std::string& name, const std::string& out) {
    return run_cli({"grad", "--input", dir.file("in.h5"), "--output", dir.file(out), "--solver",
                    "unrolled", "--iterations", "5", "--forward", name});
  };
  const std::tuple<std::string, std::string, double> cases[] = {
      {"megatron_main", "megatron_main", 1e-6}, {"magi2", "magi2", 1e-12},
      {"mhc_triton", "mhc_triton", 1e-8},       {"maxtext", "tilekernels", 1e-6},
      {"megatron_dev", "tilekernels", 1e-6},    {"tilekernels", "tilekernels", 1e-6}};
  for (const auto& [name, recorded, eps] : cases) {
    const CliResult run = grad(name, name + ".h5");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const h5::File out = h5::File::open(dir.file(name + ".h5"));
    EXPECT_EQ(h5::read_string_attribute(out, "forward"), recorded);
    EXPECT_EQ(h5::read_double_attribute(out, "eps"), eps);
    for (const std::int32_t status : h5::read_vector<std::int32_t>(out, "status"))
      EXPECT_EQ(status, 0) << name;
  }
  for (const char* alias : {"maxtext.h5", "megatron_dev.h5"})
    for (const char* dataset : {"R", "grad_logits"})
      EXPECT_EQ(
          h5::Dataset::open(h5::File::open(dir.file(alias)), dataset).read<double>(),
          h5::Dataset::open(h5::File::open(dir.file("tilekernels.h5")), dataset).read<double>())
          << alias << " " << dataset;
  const CliResult help = run_cli({"grad", "--help"});
  for (const char* text : {"megatron_main: exp(M - row max)", "maxtext = tilekernels", "max(sum,"})
    EXPECT_NE(help.out.find(text), std::string::npos) << text << "\n" << help.out;
}

}  // namespace
}  // namespace sinkgrad::testing
