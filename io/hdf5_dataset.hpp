#pragma once
// Datasets of numbers of any rank (in practice 1-D, 2-D and 3-D) holding float32, float64,
// int32 or int64, stored little-endian IEEE / two's complement.
//
//   h5::write_dataset<double>(group, "column_violation", {B}, data);
//   h5::write_dataset<std::int32_t>(group, "status", {B}, codes);
//   auto info = h5::Dataset::open(file, "logits").info();   // shape, element type
//   std::vector<float> x = h5::Dataset::open(file, "logits").read<float>();
//
// Reading converts between float32 and float64 and between int32 and int64 (HDF5 converts
// while reading); reading floats as integers or the reverse is refused. An extendable dataset
// (unlimited first dimension, chunked) grows by whole rows with append(): the log writer's
// per-iteration or per-run records.
//
// Element types: T = float, double, std::int32_t, std::int64_t.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/hdf5_group.hpp"

namespace sinkgrad::h5 {

enum class ElementType { float32, float64, int32, int64, other };
std::string_view to_string(ElementType type);

struct DatasetInfo {
  std::vector<std::size_t> shape;
  ElementType type = ElementType::other;
  std::string type_name;  // "float32", ..., or e.g. "int16", "uint8", "string", "compound"

  std::size_t rank() const { return shape.size(); }
  std::size_t size() const;        // number of elements
  std::string shape_text() const;  // "(3, 4, 4)"
};

class Dataset;

// Creates the dataset `name` of the given shape from row-major data (shape's product
// elements). Throws when the name is taken.
template <class T>
Dataset write_dataset(const Group& group, const std::string& name,
                      const std::vector<std::size_t>& shape, const T* data);

template <class T>
Dataset write_vector(const Group& group, const std::string& name, const std::vector<T>& values);

// A 1-D dataset read whole; throws unless the rank is 1.
template <class T>
std::vector<T> read_vector(const Group& group, const std::string& name);

// An empty dataset of shape (0, row_shape...) that grows with Dataset::append; chunk_rows
// rows per chunk.
template <class T>
Dataset create_extendable_dataset(const Group& group, const std::string& name,
                                  const std::vector<std::size_t>& row_shape,
                                  std::size_t chunk_rows = 64);

class Dataset : public Object {
 public:
  Dataset() = default;
  // Throws when the group has no dataset of that name (listing what it holds).
  static Dataset open(const Group& group, const std::string& name);

  DatasetInfo info() const;

  // All elements, row-major; see the conversions above.
  template <class T>
  std::vector<T> read() const;
  // Same into out, which holds info().size() elements.
  template <class T>
  void read_into(T* out) const;

  // Adds `count` rows (each of the shape after the first dimension) at the end of an
  // extendable dataset.
  template <class T>
  void append(const T* rows, std::size_t count) const;

 private:
  Dataset(Handle handle, std::string file_path, std::string path)
      : Object(std::move(handle), "dataset", std::move(file_path), std::move(path)) {}
  template <class T>
  friend Dataset write_dataset(const Group&, const std::string&, const std::vector<std::size_t>&,
                               const T*);
  template <class T>
  friend Dataset create_extendable_dataset(const Group&, const std::string&,
                                           const std::vector<std::size_t>&, std::size_t);
};

template <class T>
Dataset write_vector(const Group& group, const std::string& name, const std::vector<T>& values) {
  return write_dataset<T>(group, name, {values.size()}, values.data());
}

}  // namespace sinkgrad::h5
