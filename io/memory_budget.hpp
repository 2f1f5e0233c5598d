#pragma once
// One memory estimate before any large allocation: a command computes what it will allocate
// from the declared shapes (and the solver's workspace), and require_memory refuses, before
// anything is allocated or written, when that exceeds the memory available. Without it a
// too-large input is killed by the kernel's OOM killer (exit 137, no message).
//
//   require_memory(MemoryEstimate().batches(4, B, n, sizeof(double)), "grad of 'in.h5'");

#include <cstdint>
#include <string>

#include "core/types.hpp"

namespace sinkgrad {

// A byte count that saturates instead of wrapping (declared shapes can be absurd).
class MemoryEstimate {
 public:
  MemoryEstimate() = default;
  // count batches of (batch, n, n) elements of element_bytes each.
  MemoryEstimate& batches(std::uint64_t count, index_t batch, index_t n,
                          std::uint64_t element_bytes);
  // count * element_bytes more bytes.
  MemoryEstimate& add(std::uint64_t count, std::uint64_t element_bytes);
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::uint64_t bytes_ = 0;
};

// Bytes this process may still allocate: MemAvailable (/proc/meminfo), lowered by a cgroup
// memory limit when there is one; SINKGRAD_MEMORY_LIMIT (bytes) lowers it further (tests).
std::uint64_t available_memory_bytes();

// "12.3 GiB", "512 MiB", "17 bytes".
std::string bytes_text(std::uint64_t bytes);

// Throws Error "<what> needs about X of memory, but only Y is available" when the estimate
// exceeds what is available.
void require_memory(const MemoryEstimate& estimate, const std::string& what);

}  // namespace sinkgrad
