#pragma once
// Progress of a sweep on stderr: runs done / total, elapsed, estimated time remaining (from the
// mean time per run so far). On a terminal one self-overwriting line that also names the run
// starting now; elsewhere (nohup, Slurm, CI, a pipe) a plain line every `every` runs or every
// 10 s, whichever comes first, and a last one at the end.

#include <chrono>
#include <cstddef>
#include <string>

namespace sinkgrad::study {

enum class ProgressMode { off, terminal, lines };

class ProgressLine {
 public:
  // every: runs between two plain lines (0: about a tenth of the total).
  ProgressLine(std::size_t total, ProgressMode mode, std::size_t every = 0);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Shows `done` finished runs and the label of the run starting now.
  void update(std::size_t done, const std::string& label);
  // Clears the terminal line, or writes the last plain line with `done` runs (the destructor
  // does the same with the count of the last update).
  void finish(std::size_t done);
  // Erases the terminal line so that a message can be printed; the next update redraws it.
  void clear();

 private:
  void finish();
  double elapsed() const;
  std::string counts(std::size_t done) const;

  std::size_t total_;
  ProgressMode mode_;
  std::size_t every_;
  bool drawn_ = false;
  std::size_t done_ = 0;
  std::size_t printed_done_ = 0;
  double printed_at_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

bool stderr_is_terminal();
// "1:05", "1:02:03".
std::string clock_text(double seconds);

}  // namespace sinkgrad::study
