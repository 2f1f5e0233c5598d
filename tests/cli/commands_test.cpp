// The commands other than grad's computation: help, version, solvers, demo, and command-line
// mistakes at the top level.

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "core/solver_registry.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::testing {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The command names listed under "Commands:" in `sinkgrad --help`.
std::vector<std::string> listed_commands() {
  const CliResult help = run_cli({"--help"});
  std::vector<std::string> names;
  bool in_list = false;
  for (const std::string& line : lines_of(help.out)) {
    if (line == "Commands:") {
      in_list = true;
    } else if (in_list && line.empty()) {
      break;
    } else if (in_list && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') {
      std::istringstream words(line);
      std::string name;
      words >> name;
      names.push_back(name);
    }
  }
  return names;
}

TEST(Commands, GeneralHelpListsTheCommandsAndCommonOptions) {
  const CliResult run = run_cli({"--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* part : {"Usage: sinkgrad COMMAND", "--threads", "--help", "Exit codes"})
    EXPECT_TRUE(contains(run.out, part)) << part << " missing from:\n" << run.out;
  const auto names = listed_commands();
  for (const char* command : {"solvers", "grad", "demo"})
    EXPECT_NE(std::find(names.begin(), names.end(), command), names.end()) << command;
}

TEST(Commands, EveryCommandExplainsItsOptions) {
  const std::map<std::string, std::vector<std::string>> own_options{
      {"solvers", {"--names"}},
      {"grad",
       {"--input", "--output", "--solver", "--iterations", "--dtype", "--device", "--option",
        "logits", "grad_output", "status"}},
      {"demo", {"--seed", "--batch", "--sizes", "--iterations", "--scale", "--dtype"}},
  };
  const auto names = listed_commands();
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    SCOPED_TRACE("sinkgrad " + name + " --help");
    const CliResult run = run_cli({name, "--help"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(contains(run.out, "Usage: sinkgrad " + name)) << run.out;
    EXPECT_TRUE(contains(run.out, "--threads")) << "the common options are missing";
    const auto it = own_options.find(name);
    if (it == own_options.end()) continue;
    for (const std::string& option : it->second)
      EXPECT_TRUE(contains(run.out, option)) << option << " missing from:\n" << run.out;
  }
}

TEST(Commands, Version) {
  const CliResult run = run_cli({"--version"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, std::string("sinkgrad ") + SINKGRAD_EXPECTED_VERSION + "\n");
}

TEST(Commands, UnknownCommandOrNoneAtAll) {
  CliResult run = run_cli({"frobnicate"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(contains(run.err, "unknown command 'frobnicate'")) << run.err;
  EXPECT_TRUE(contains(run.err, "grad")) << "the message should list the commands";
  run = run_cli({});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(contains(run.err, "Usage: sinkgrad COMMAND")) << run.err;
}

TEST(Commands, CommonOptionValuesAreChecked) {
  const CliResult run = run_cli({"solvers", "--threads", "0"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(contains(run.err, "--threads")) << run.err;
  EXPECT_EQ(run_cli({"solvers", "--threads", "1"}).exit_code, 0);
}

TEST(Commands, SolversListsEveryRegisteredSolverWithItsOptions) {
  const CliResult run = run_cli({"solvers"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const SolverRegistry& registry = SolverRegistry::global();
  for (const char* builtin : {"unrolled", "cg_plain", "cg_corrected", "direct"})
    EXPECT_TRUE(registry.contains(builtin)) << builtin;
  const auto lines = lines_of(run.out);
  for (const std::string& name : registry.names()) {
    SCOPED_TRACE(name);
    EXPECT_NE(std::find(lines.begin(), lines.end(), name), lines.end())
        << "no line naming the solver in:\n"
        << run.out;
    const SolverInfo& info = registry.info(name);
    EXPECT_TRUE(contains(run.out, info.description.substr(0, 20)));
    for (const OptionSpec& option : info.options) {
      EXPECT_TRUE(contains(run.out, option.name + " (default " + option.default_value + "; " +
                                        option.accepted() + ")"))
          << option.name;
    }
  }
  EXPECT_TRUE(contains(run.out, "precisions: float32, float64")) << run.out;

  const CliResult names = run_cli({"solvers", "--names"});
  ASSERT_EQ(names.exit_code, 0);
  EXPECT_EQ(lines_of(names.out), registry.names());
}

TEST(Commands, DemoRunsSmallAndRepeatsWithItsSeed) {
  const std::vector<std::string> args{"demo",         "--batch", "16", "--sizes", "3",   "5",
                                      "--iterations", "2",       "60", "--seed",  "4242"};
  const CliResult run = run_cli(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* part :
       {"seed 4242", "n = 3, T = 2", "n = 3, T = 60", "n = 5, T = 2", "n = 5, T = 60", "unrolled",
        "cg_plain schur", "cg_plain block", "cg_corrected", "direct corrected", "direct plain",
        "median rel err", "Legend"})
    EXPECT_TRUE(contains(run.out, part)) << part << " missing from:\n" << run.out;

  // Same seed, same matrices: the forward's violations (and so the table) repeat.
  const CliResult again = run_cli(args);
  auto forward_lines = [](const std::string& text) {
    std::vector<std::string> kept;
    for (const std::string& line : lines_of(text))
      if (contains(line, "forward max|c - 1|")) kept.push_back(line);
    return kept;
  };
  EXPECT_EQ(forward_lines(run.out), forward_lines(again.out));
  EXPECT_EQ(forward_lines(run.out).size(), 4u);

  // At T = 60 the forward of these well-scaled logits has converged, where every implicit
  // formula is exact: the corrected CG must agree with unrolled to far better than 1e-6.
  bool in_block = false, checked = false;
  for (const std::string& line : lines_of(run.out)) {
    if (contains(line, "forward max|c - 1|")) in_block = contains(line, "n = 5, T = 60");
    if (in_block && line.rfind("  cg_corrected ", 0) == 0) {
      std::istringstream cells(line);
      std::string label, median;
      cells >> label >> median;
      EXPECT_LT(std::stod(median), 1e-6) << line;
      checked = true;
    }
  }
  EXPECT_TRUE(checked) << run.out;
}

TEST(Commands, DemoRejectsBadSettings) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"demo", "--batch", "0"},
        std::vector<std::string>{"demo", "--sizes", "0"},
        std::vector<std::string>{"demo", "--iterations", "0"},
        std::vector<std::string>{"demo", "--sizes", "3", "3"},
        std::vector<std::string>{"demo", "--iterations", "5", "2", "5"},
        std::vector<std::string>{"demo", "--dtype", "half"},
        std::vector<std::string>{"demo", "--scale=-1"}}) {
    const CliResult run = run_cli(args);
    EXPECT_EQ(run.exit_code, 2) << args[1];
    EXPECT_TRUE(contains(run.err, args[1].substr(0, args[1].find('=')))) << run.err;
  }
}

}  // namespace
}  // namespace sinkgrad::testing
