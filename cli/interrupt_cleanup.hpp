#pragma once
// Removes a file if the process is interrupted (SIGINT, SIGTERM, SIGHUP) while the guard
// lives, then lets the signal end the process as it would have. `grad` arms it for its
// temporary output file, so that Ctrl-C leaves no hidden half-written file behind.
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
  struct sigaction previous_[3];
};

}  // namespace sinkgrad::cli
