#pragma once
// Removes a file if the process is interrupted (SIGINT, SIGTERM, SIGHUP) or crashes (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT: a library or plugin fault, std::terminate) while the guard
// lives, then lets the signal end the process as it would have (a core dump included). `grad`
// arms it for its temporary output file, so that neither Ctrl-C nor a crash leaves a hidden
// half-written file behind.
// One guard at a time; the previous signal handlers come back when it is destroyed.

#include <csignal>
#include <string>

namespace sinkgrad::cli {

class RemoveOnInterrupt {
 public:
  explicit RemoveOnInterrupt(const std::string& path);
  ~RemoveOnInterrupt();
  RemoveOnInterrupt(const RemoveOnInterrupt&) = delete;
  RemoveOnInterrupt& operator=(const RemoveOnInterrupt&) = delete;

 private:
  struct sigaction previous_[8];
};

}  // namespace sinkgrad::cli
