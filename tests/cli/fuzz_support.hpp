#pragma once
// The harness of the fuzz-style tests (fuzz_cli_test.cpp) and of the tests of refusals that
// could crash or hang (plugin_checks_test.cpp): the real binary under a time limit, and the
// promises every refused case keeps.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::testing {

constexpr int time_limit_seconds = 30;

struct Outcome {
  int exit_code = -1;
  bool signalled = false;
  std::string err;
};

// Runs the tool under `timeout -s KILL`: a hang shows as a signal.
inline Outcome run_limited(const std::vector<std::string>& args, const ScratchDir& capture) {
  std::string command = "timeout -s KILL " + std::to_string(time_limit_seconds) + " " +
                        shell_quoted(SINKGRAD_CLI_PATH);
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on " " + string.
  for (const std::string& arg : args) command.append(" ").append(shell_quoted(arg));
  command.append(" >").append(shell_quoted(capture.file("stdout")));
  command.append(" 2>").append(shell_quoted(capture.file("stderr")));
  const int status = std::system(command.c_str());
  Outcome outcome;
  outcome.signalled = !WIFEXITED(status) || WEXITSTATUS(status) >= 124;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  outcome.err = read_text(capture.file("stderr"));
  return outcome;
}

inline std::vector<std::string> sorted_entries(const ScratchDir& dir) {
  std::vector<std::string> names = dir.entries();
  std::sort(names.begin(), names.end());
  return names;
}

// Runs one case in `dir` (whose files are its inputs) and checks every promise.
inline void check_case(const std::string& name, const ScratchDir& dir,
                       const std::vector<std::string>& args) {
  SCOPED_TRACE(name);
  const std::vector<std::string> before = sorted_entries(dir);
  std::vector<std::string> contents;
  for (const std::string& entry : before) contents.push_back(read_text(dir.file(entry)));
  const ScratchDir capture;
  const Outcome outcome = run_limited(args, capture);
  EXPECT_FALSE(outcome.signalled) << "crash or hang, exit " << outcome.exit_code << ": "
                                  << outcome.err;
  EXPECT_TRUE(outcome.exit_code == 1 || outcome.exit_code == 2)
      << "exit " << outcome.exit_code << ": " << outcome.err;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  EXPECT_EQ(outcome.err.rfind("sinkgrad ", 0), 0u) << outcome.err;
  EXPECT_EQ(outcome.err.find("Sanitizer"), std::string::npos) << outcome.err;
  EXPECT_EQ(outcome.err.find("runtime error"), std::string::npos) << outcome.err;
  EXPECT_EQ(sorted_entries(dir), before) << "an output or temporary file was left behind";
  for (std::size_t k = 0; k < before.size(); ++k)
    EXPECT_EQ(read_text(dir.file(before[k])), contents[k]) << before[k] << " was changed";
}

}  // namespace sinkgrad::testing
