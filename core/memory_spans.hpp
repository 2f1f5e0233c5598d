#pragma once
// The bytes an array occupies, as addresses (device pointers too), for the checks that keep
// every output of a call apart from its inputs and from its other outputs.

#include <cstdint>

#include "core/types.hpp"

namespace sinkgrad {

struct Span {
  std::uintptr_t begin, end;
  const char* what;
};

// The bytes of an array of count T's; empty for a null array.
template <class T>
Span span_of(const char* what, const T* data, index_t count) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  return {begin, data == nullptr ? begin : begin + static_cast<std::uintptr_t>(count) * sizeof(T),
          what};
}

// Whether two spans share a byte (an empty one shares none).
inline bool overlap(const Span& a, const Span& b) {
  return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

}  // namespace sinkgrad
