#include "experiments/study/progress_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sinkgrad::study {

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

std::string clock_text(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

ProgressLine::ProgressLine(std::size_t total, bool enabled) : total_(total), enabled_(enabled) {}

ProgressLine::~ProgressLine() {
  finish();
}

void ProgressLine::update(std::size_t done, const std::string& label) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string eta =
      done == 0
          ? "?"
          : clock_text(elapsed / static_cast<double>(done) * static_cast<double>(total_ - done));
  std::string line = std::string("[") + std::to_string(done) + "/" + std::to_string(total_) + "] " +
                     std::to_string(total_ == 0 ? 100 : 100 * done / total_) + "%  elapsed " +
                     clock_text(elapsed) + "  eta " + eta + "  " + label;
  if (line.size() > 110) line.resize(110);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace sinkgrad::study
