#include "experiments/study/progress_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sinkgrad::study {
namespace {

// A plain line at least this often while runs finish, so a slow sweep still shows it lives.
constexpr double line_interval_seconds = 10;

}  // namespace

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

ProgressLine::ProgressLine(std::size_t total, ProgressMode mode, std::size_t every)
    : total_(total),
      mode_(mode),
      every_(every > 0 ? every : std::max<std::size_t>(1, (total + 9) / 10)) {}

ProgressLine::~ProgressLine() {
  finish();
}

double ProgressLine::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// "[12/40] 30%  elapsed 0:05  eta 0:12"
std::string ProgressLine::counts(std::size_t done) const {
  const double seconds = elapsed();
  const std::string eta =
      done == 0
          ? "?"
          : clock_text(seconds / static_cast<double>(done) * static_cast<double>(total_ - done));
  return std::string("[") + std::to_string(done) + "/" + std::to_string(total_) + "] " +
         std::to_string(total_ == 0 ? 100 : 100 * done / total_) + "%  elapsed " +
         clock_text(seconds) + "  eta " + eta;
}

void ProgressLine::update(std::size_t done, const std::string& label) {
  done_ = done;
  if (mode_ == ProgressMode::terminal) {
    std::string line = counts(done) + "  " + label;
    if (line.size() > 110) line.resize(110);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  } else if (mode_ == ProgressMode::lines && done > printed_done_ &&
             (done - printed_done_ >= every_ || elapsed() - printed_at_ >= line_interval_seconds)) {
    std::fprintf(stderr, "sinkgrad run: %s\n", counts(done).c_str());
    std::fflush(stderr);
    printed_done_ = done;
    printed_at_ = elapsed();
  }
}

void ProgressLine::clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

void ProgressLine::finish(std::size_t done) {
  done_ = done;
  finish();
}

void ProgressLine::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  if (mode_ == ProgressMode::lines && done_ > printed_done_) {
    std::fprintf(stderr, "sinkgrad run: %s\n", counts(done_).c_str());
    std::fflush(stderr);
  }
}

}  // namespace sinkgrad::study
