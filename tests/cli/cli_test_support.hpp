#pragma once
// Helpers for tests that run the real `sinkgrad` binary: a scratch directory per test, running
// the tool with captured output and exit code, and writing input files.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "io/hdf5.hpp"

namespace sinkgrad::testing {

// A fresh directory, removed with everything in it at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sinkgrad_cli_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Names of the entries in the directory (to find leftover temporary files).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      names.push_back(entry.path().filename().string());
    return names;
  }

 private:
  std::filesystem::path path_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

#if defined(SINKGRAD_CLI_PATH)
// Runs build/bin/sinkgrad with args; stdout and stderr are captured separately.
inline CliResult run_cli(const std::vector<std::string>& args) {
  const ScratchDir capture;
  std::string command = shell_quoted(SINKGRAD_CLI_PATH);
  for (const std::string& arg : args) command.append(" ").append(shell_quoted(arg));
  command.append(" >").append(shell_quoted(capture.file("stdout")));
  command.append(" 2>").append(shell_quoted(capture.file("stderr")));
  const int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(capture.file("stdout"));
  result.err = read_text(capture.file("stderr"));
  return result;
}
#endif

// Writes the input file of `sinkgrad grad`.
template <class LogitsReal, class GradReal>
void write_grad_input(const std::string& path, const HostBatch<LogitsReal>& logits,
                      const HostBatch<GradReal>& grad_output) {
  const h5::File file = h5::File::create(path, h5::File::Exists::replace);
  h5::write_batch<LogitsReal>(file, "logits", logits.view());
  h5::write_batch<GradReal>(file, "grad_output", grad_output.view());
}

}  // namespace sinkgrad::testing
