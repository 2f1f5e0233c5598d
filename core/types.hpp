#pragma once
// Vocabulary shared by every layer: index type, precisions, devices, memory spaces.

#include <cstdint>
#include <string>
#include <string_view>

namespace sinkgrad {

// 64-bit so that batches of 2^26 matrices of 64 x 64 can be addressed.
using index_t = std::int64_t;

enum class Precision { float32, float64 };
enum class Device { cpu, cuda };
// Where a batch's memory lives (independent of the device that computes on it).
enum class MemorySpace { host, device };

template <class Real>
constexpr Precision precision_of();
template <>
constexpr Precision precision_of<float>() {
  return Precision::float32;
}
template <>
constexpr Precision precision_of<double>() {
  return Precision::float64;
}

std::string_view to_string(Precision precision);
std::string_view to_string(Device device);
Precision parse_precision(std::string_view text);  // "float32" | "float64", throws Error
Device parse_device(std::string_view text);        // "cpu" | "cuda", throws Error

}  // namespace sinkgrad
