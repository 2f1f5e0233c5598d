#include "io/memory_budget.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace sinkgrad {
namespace {

constexpr std::uint64_t saturated = std::numeric_limits<std::uint64_t>::max();

std::uint64_t times(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > saturated / b ? saturated : a * b;
}

std::uint64_t plus(std::uint64_t a, std::uint64_t b) {
  return a > saturated - b ? saturated : a + b;
}

// The first number in a file such as /sys/fs/cgroup/memory.max ("max" reads as no limit).
std::uint64_t number_in(const std::string& path, std::uint64_t otherwise) {
  std::ifstream in(path);
  unsigned long long value = 0;
  return in >> value ? value : otherwise;
}

}  // namespace

MemoryEstimate& MemoryEstimate::batches(std::uint64_t count, index_t batch, index_t n,
                                        std::uint64_t element_bytes) {
  const auto b = static_cast<std::uint64_t>(batch < 0 ? 0 : batch);
  const auto m = static_cast<std::uint64_t>(n < 0 ? 0 : n);
  bytes_ = plus(bytes_, times(times(times(count, b), times(m, m)), element_bytes));
  return *this;
}

MemoryEstimate& MemoryEstimate::add(std::uint64_t count, std::uint64_t element_bytes) {
  bytes_ = plus(bytes_, times(count, element_bytes));
  return *this;
}

std::uint64_t available_memory_bytes() {
  std::uint64_t available = saturated;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  unsigned long long kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") available = times(kib, 1024);
  // cgroup v2: the limit minus what the group already uses.
  const std::uint64_t limit = number_in("/sys/fs/cgroup/memory.max", saturated);
  if (limit != saturated) {
    const std::uint64_t used = number_in("/sys/fs/cgroup/memory.current", 0);
    available = std::min(available, limit > used ? limit - used : 0);
  }
  if (const char* cap = std::getenv("SINKGRAD_MEMORY_LIMIT")) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(cap, &end, 10);
    if (end != cap && *end == '\0') available = std::min<std::uint64_t>(available, value);
  }
  return available;
}

std::string bytes_text(std::uint64_t bytes) {
  if (bytes == saturated) return "more than 16 EiB";
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

void require_memory(const MemoryEstimate& estimate, const std::string& what) {
  const std::uint64_t available = available_memory_bytes();
  if (estimate.bytes() > available)
    throw Error(what + " needs " + (estimate.bytes() == saturated ? "" : "about ") +
                bytes_text(estimate.bytes()) + " of memory, but only " + bytes_text(available) +
                " is available");
}

}  // namespace sinkgrad
