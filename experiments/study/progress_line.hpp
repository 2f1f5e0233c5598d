#pragma once
// One self-overwriting status line on a terminal: runs done / total, elapsed, estimated time
// remaining (from the mean time per run so far) and what runs now. Silent when stderr is not
// a terminal (logs of batch jobs stay clean).

#include <chrono>
#include <cstddef>
#include <string>

namespace sinkgrad::study {

class ProgressLine {
 public:
  // enabled: draw at all (pass stderr_is_terminal() for the default behaviour).
  ProgressLine(std::size_t total, bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Shows `done` finished runs and the label of the run starting now.
  void update(std::size_t done, const std::string& label);
  // Clears the line (called by the destructor too).
  void finish();

 private:
  std::size_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

bool stderr_is_terminal();
// "1:05", "1:02:03".
std::string clock_text(double seconds);

}  // namespace sinkgrad::study
