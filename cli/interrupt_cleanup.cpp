#include "cli/interrupt_cleanup.hpp"

#include <unistd.h>

#include <cstring>

namespace sinkgrad::cli {
namespace {

constexpr int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV,
                                   SIGBUS, SIGFPE,  SIGILL, SIGABRT};
constexpr int handled_count = sizeof handled_signals / sizeof handled_signals[0];
static_assert(handled_count == 8, "RemoveOnInterrupt::previous_ holds one action per signal");

// The handler may only touch async-signal-safe state: a fixed buffer and a flag.
char armed_path[4096];
volatile std::sig_atomic_t armed = 0;

// For a fault (SIGSEGV, SIGBUS, ...) the raised signal stays blocked until the handler returns;
// the faulting instruction then runs again and ends the process with the default action.
extern "C" void remove_and_reraise(int signal_number) {
  if (armed) ::unlink(armed_path);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

}  // namespace

RemoveOnInterrupt::RemoveOnInterrupt(const std::string& path) {
  if (path.size() < sizeof armed_path) {
    std::memcpy(armed_path, path.c_str(), path.size() + 1);
    armed = 1;
  }
  struct sigaction action {};
  action.sa_handler = remove_and_reraise;
  sigemptyset(&action.sa_mask);
  for (int k = 0; k < handled_count; ++k) sigaction(handled_signals[k], &action, &previous_[k]);
}

RemoveOnInterrupt::~RemoveOnInterrupt() {
  for (int k = 0; k < handled_count; ++k) sigaction(handled_signals[k], &previous_[k], nullptr);
  armed = 0;
}

}  // namespace sinkgrad::cli
