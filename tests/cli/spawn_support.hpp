#pragma once
// Starting the real `sinkgrad` binary as a child process with a file-size limit
// (RLIMIT_FSIZE, SIGXFSZ ignored, so that a write past it fails with EFBIG as a full disk
// fails with ENOSPC), extra environment variables, and in the background.

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::testing {

struct SpawnOptions {
  long long file_size_limit = -1;                                // bytes; -1: none
  std::vector<std::pair<std::string, std::string>> environment;  // set in the child
};

// Starts `sinkgrad args...` with stdout and stderr to the files `out` and `err`; returns its pid.
inline pid_t spawn_cli(const std::vector<std::string>& args, const std::string& out,
                       const std::string& err, const SpawnOptions& options = {}) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (options.file_size_limit >= 0) {
    const rlimit limit{static_cast<rlim_t>(options.file_size_limit),
                       static_cast<rlim_t>(options.file_size_limit)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
  }
  for (const auto& [name, value] : options.environment) ::setenv(name.c_str(), value.c_str(), 1);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  std::vector<char*> argv;
  std::string program = SINKGRAD_CLI_PATH;
  argv.push_back(program.data());
  std::vector<std::string> copies = args;
  for (std::string& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
  ::_exit(127);
}

struct Finished {
  int exit_code = -1;  // -1 when it ended by a signal
  int signal = 0;
  std::string out, err;
};

inline Finished wait_cli(pid_t pid, const std::string& out, const std::string& err) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  Finished result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

// Runs `sinkgrad args...` to the end in the foreground.
inline Finished run_cli_with(const ScratchDir& dir, const std::vector<std::string>& args,
                             const SpawnOptions& options = {}) {
  const std::string out = dir.file("spawn.out"), err = dir.file("spawn.err");
  return wait_cli(spawn_cli(args, out, err, options), out, err);
}

}  // namespace sinkgrad::testing
