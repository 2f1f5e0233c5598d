#pragma once
// The element types of hdf5_dataset.cpp: T -> ElementType -> the HDF5 memory and file
// (little-endian) types. Internal to the HDF5 layer.

#include <cstdint>
#include <type_traits>

#include "io/hdf5_dataset.hpp"
#include "io/hdf5_handle.hpp"

namespace sinkgrad::h5::element_types {

// The element type of T = float, double, std::int32_t, std::int64_t.
template <class T>
constexpr ElementType element_type_of() {
  if constexpr (std::is_same_v<T, float>) return ElementType::float32;
  if constexpr (std::is_same_v<T, double>) return ElementType::float64;
  if constexpr (std::is_same_v<T, std::int32_t>) return ElementType::int32;
  if constexpr (std::is_same_v<T, std::int64_t>) return ElementType::int64;
}

// The native type of an element in memory and its stored type; throw for ElementType::other.
hid_t memory_type(ElementType type);
hid_t file_type(ElementType type);

bool is_floating(ElementType type);
bool is_integer(ElementType type);

}  // namespace sinkgrad::h5::element_types
