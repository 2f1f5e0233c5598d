#include "io/hdf5_dataset.hpp"

#include <limits>
#include <type_traits>

#include "core/error.hpp"
#include "io/hdf5_element_type.hpp"

namespace sinkgrad::h5 {
namespace {

using namespace element_types;

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::vector<hsize_t> to_hsize(const std::vector<std::size_t>& shape) {
  return std::vector<hsize_t>(shape.begin(), shape.end());
}

// The filter of the dataset that this HDF5 cannot decode, as "32000 (lzf)", or "" if none: a
// dataset written with one (h5py's LZF, Blosc) fails deep inside H5Dread with an error about a
// plugin directory. Optional filters count: h5py marks LZF so, and stores the chunks it
// compressed filtered.
std::string undecodable_filter(const Dataset& dataset) {
  const Handle plist(H5Dget_create_plist(dataset.id()));
  const int count = plist.valid() ? H5Pget_nfilters(plist.get()) : -1;
  for (int k = 0; k < count; ++k) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    char name[80] = {};
    const H5Z_filter_t filter = H5Pget_filter2(plist.get(), static_cast<unsigned>(k), &flags,
                                               &values, nullptr, sizeof name, name, &config);
    if (filter >= 0 && H5Zfilter_avail(filter) <= 0)
      return std::to_string(filter) + (name[0] != '\0' ? " (" + std::string(name) + ")" : "");
  }
  return "";
}

// Reads the whole dataset in its stored element type `stored` into out (size elements).
void raw_read(const Dataset& dataset, ElementType stored, void* out, std::size_t size) {
  if (size == 0) return;
  if (H5Dread(dataset.id(), memory_type(stored), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0) return;
  const std::string reason = take_hdf5_reason();  // before the calls below replace it
  const std::string filter = undecodable_filter(dataset);
  if (!filter.empty())
    throw Error("cannot read " + dataset.describe() + ": it is compressed with HDF5 filter " +
                filter +
                ", which this HDF5 library cannot decode; write it uncompressed or "
                "with gzip (h5py: compression='gzip')");
  throw Error("cannot read " + dataset.describe() +
              (reason.empty() ? std::string() : " (HDF5: " + reason + ")"));
}

}  // namespace

std::size_t DatasetInfo::size() const {
  std::size_t total = 1;
  for (std::size_t extent : shape) total *= extent;
  return total;
}

std::string DatasetInfo::shape_text() const {
  return h5::shape_text(shape);
}

Dataset Dataset::open(const Group& group, const std::string& name) {
  group.require_dataset(name);
  const std::string path = group.child_path(name);
  Handle handle(
      checked(H5Dopen2(group.id(), name.c_str(), H5P_DEFAULT),
              "cannot open dataset " + quoted(path) + " in file " + quoted(group.file_path())));
  return Dataset(std::move(handle), group.file_path(), path);
}

DatasetInfo Dataset::info() const {
  DatasetInfo info;
  Handle space(checked(H5Dget_space(id()), "cannot read the shape of " + describe()));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw_hdf5_error("cannot read the shape of " + describe());
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    throw_hdf5_error("cannot read the shape of " + describe());
  info.shape.assign(dims.begin(), dims.end());

  Handle type(checked(H5Dget_type(id()), "cannot read the element type of " + describe()));
  const H5T_class_t type_class = H5Tget_class(type.get());
  const size_t bytes = H5Tget_size(type.get());
  const std::string bits = std::to_string(8 * bytes);
  switch (type_class) {
    case H5T_FLOAT:
      info.type = bytes == 4   ? ElementType::float32
                  : bytes == 8 ? ElementType::float64
                               : ElementType::other;
      info.type_name = "float" + bits;
      break;
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
      info.type = !is_signed   ? ElementType::other
                  : bytes == 4 ? ElementType::int32
                  : bytes == 8 ? ElementType::int64
                               : ElementType::other;
      info.type_name = (is_signed ? "int" : "uint") + bits;
      break;
    }
    case H5T_STRING:
      info.type_name = "string";
      break;
    case H5T_COMPOUND:
      info.type_name = "compound";
      break;
    case H5T_ENUM:
      info.type_name = "enum";
      break;
    case H5T_ARRAY:
      info.type_name = "array";
      break;
    default:
      info.type_name = "a non-numeric type";
      break;
  }
  return info;
}

template <class T>
void Dataset::read_into(T* out) const {
  constexpr ElementType wanted = element_type_of<T>();
  const DatasetInfo stored = info();
  const bool compatible = (is_floating(wanted) && is_floating(stored.type)) ||
                          (is_integer(wanted) && is_integer(stored.type));
  if (!compatible)
    throw Error(describe() + " holds " + stored.type_name + ", expected " +
                (is_floating(wanted) ? "float32 or float64" : "int32 or int64"));
  const std::size_t size = stored.size();
  if (stored.type == wanted) {
    raw_read(*this, wanted, out, size);
    return;
  }
  // A different width of the same kind: read as stored and convert here, so that the result
  // is well defined (float64 -> float32 rounds, overflows to +-inf; int64 -> int32 is checked).
  if constexpr (std::is_floating_point_v<T>) {
    if (stored.type == ElementType::float32) {
      std::vector<float> raw(size);
      raw_read(*this, stored.type, raw.data(), size);
      for (std::size_t k = 0; k < size; ++k) out[k] = static_cast<T>(raw[k]);
    } else {
      std::vector<double> raw(size);
      raw_read(*this, stored.type, raw.data(), size);
      for (std::size_t k = 0; k < size; ++k) out[k] = static_cast<T>(raw[k]);
    }
  } else {
    std::vector<std::int64_t> raw(size);
    raw_read(*this, ElementType::int64, raw.data(), size);  // int32 -> int64 is exact
    for (std::size_t k = 0; k < size; ++k) {
      if (raw[k] < std::numeric_limits<T>::min() || raw[k] > std::numeric_limits<T>::max())
        throw Error(describe() + ": element " + std::to_string(k) + " = " + std::to_string(raw[k]) +
                    " does not fit in " + std::string(to_string(wanted)));
      out[k] = static_cast<T>(raw[k]);
    }
  }
}

template <class T>
std::vector<T> Dataset::read() const {
  std::vector<T> values(info().size());
  read_into(values.data());
  return values;
}

template <class T>
void Dataset::append(const T* rows, std::size_t count) const {
  constexpr ElementType type = element_type_of<T>();
  const DatasetInfo stored = info();
  if (stored.type != type)
    throw Error("cannot append " + std::string(to_string(type)) + " rows to " + describe() +
                ", which holds " + stored.type_name);
  if (stored.rank() == 0) throw Error("cannot append rows to the scalar " + describe());
  if (count == 0) return;
  std::vector<hsize_t> extent = to_hsize(stored.shape);
  std::vector<hsize_t> start(extent.size(), 0), block = extent;
  start[0] = extent[0];
  block[0] = count;
  extent[0] += count;
  checked_status(H5Dset_extent(id(), extent.data()),
                 "cannot extend " + describe() + " (was it created extendable?)");
  Handle file_space(checked(H5Dget_space(id()), "cannot select rows of " + describe()));
  checked_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                     block.data(), nullptr),
                 "cannot select rows of " + describe());
  Handle memory_space(
      checked(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr),
              "cannot describe rows for " + describe()));
  checked_status(
      H5Dwrite(id(), memory_type(type), memory_space.get(), file_space.get(), H5P_DEFAULT, rows),
      "cannot append rows to " + describe());
}

template <class T>
Dataset write_dataset(const Group& group, const std::string& name,
                      const std::vector<std::size_t>& shape, const T* data) {
  constexpr ElementType type = element_type_of<T>();
  const std::string where =
      "dataset " + quoted(group.child_path(name)) + " in file " + quoted(group.file_path());
  if (group.has(name)) throw Error("cannot create " + where + ": the name is taken");
  const std::vector<hsize_t> dims = to_hsize(shape);
  Handle space(checked(dims.empty()
                           ? H5Screate(H5S_SCALAR)
                           : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                       "cannot describe shape " + shape_text(shape) + " of " + where));
  Handle plist(checked(H5Pcreate(H5P_LINK_CREATE), "cannot create a property list"));
  H5Pset_create_intermediate_group(plist.get(), 1);
  Handle handle(checked(H5Dcreate2(group.id(), name.c_str(), file_type(type), space.get(),
                                   plist.get(), H5P_DEFAULT, H5P_DEFAULT),
                        "cannot create " + where));
  Dataset dataset(std::move(handle), group.file_path(), group.child_path(name));
  std::size_t size = 1;
  for (std::size_t extent : shape) size *= extent;
  if (size > 0)
    checked_status(H5Dwrite(dataset.id(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
                   "cannot write " + where);
  return dataset;
}

template <class T>
std::vector<T> read_vector(const Group& group, const std::string& name) {
  const Dataset dataset = Dataset::open(group, name);
  const DatasetInfo info = dataset.info();
  if (info.rank() != 1)
    throw Error(dataset.describe() + " has rank " + std::to_string(info.rank()) + " (shape " +
                info.shape_text() + "), expected a vector (rank 1)");
  return dataset.read<T>();
}

template <class T>
Dataset create_extendable_dataset(const Group& group, const std::string& name,
                                  const std::vector<std::size_t>& row_shape,
                                  std::size_t chunk_rows) {
  constexpr ElementType type = element_type_of<T>();
  const std::string where =
      "dataset " + quoted(group.child_path(name)) + " in file " + quoted(group.file_path());
  if (group.has(name)) throw Error("cannot create " + where + ": the name is taken");
  std::vector<hsize_t> dims{0}, max_dims{H5S_UNLIMITED}, chunk{chunk_rows > 0 ? chunk_rows : 1};
  for (std::size_t extent : row_shape) {
    dims.push_back(extent);
    max_dims.push_back(extent);
    chunk.push_back(extent > 0 ? extent : 1);
  }
  Handle space(
      checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims.data()),
              "cannot describe the shape of " + where));
  Handle create(checked(H5Pcreate(H5P_DATASET_CREATE), "cannot create a property list"));
  checked_status(H5Pset_chunk(create.get(), static_cast<int>(chunk.size()), chunk.data()),
                 "cannot set the chunk shape of " + where);
  Handle link(checked(H5Pcreate(H5P_LINK_CREATE), "cannot create a property list"));
  H5Pset_create_intermediate_group(link.get(), 1);
  Handle handle(checked(H5Dcreate2(group.id(), name.c_str(), file_type(type), space.get(),
                                   link.get(), create.get(), H5P_DEFAULT),
                        "cannot create " + where));
  return Dataset(std::move(handle), group.file_path(), group.child_path(name));
}

#define SINKGRAD_H5_DATASET_TYPES(T)                                              \
  template std::vector<T> Dataset::read<T>() const;                               \
  template void Dataset::read_into<T>(T*) const;                                  \
  template void Dataset::append<T>(const T*, std::size_t) const;                  \
  template Dataset write_dataset<T>(const Group&, const std::string&,             \
                                    const std::vector<std::size_t>&, const T*);   \
  template std::vector<T> read_vector<T>(const Group&, const std::string&);       \
  template Dataset create_extendable_dataset<T>(const Group&, const std::string&, \
                                                const std::vector<std::size_t>&, std::size_t);
SINKGRAD_H5_DATASET_TYPES(float)
SINKGRAD_H5_DATASET_TYPES(double)
SINKGRAD_H5_DATASET_TYPES(std::int32_t)
SINKGRAD_H5_DATASET_TYPES(std::int64_t)
#undef SINKGRAD_H5_DATASET_TYPES

}  // namespace sinkgrad::h5
