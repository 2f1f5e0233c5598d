#include "io/hdf5_element_type.hpp"

#include "core/error.hpp"

namespace sinkgrad::h5 {

std::string_view to_string(ElementType type) {
  switch (type) {
    case ElementType::float32:
      return "float32";
    case ElementType::float64:
      return "float64";
    case ElementType::int32:
      return "int32";
    case ElementType::int64:
      return "int64";
    case ElementType::other:
      break;
  }
  return "unsupported";
}

namespace element_types {

hid_t memory_type(ElementType type) {
  switch (type) {
    case ElementType::float32:
      return H5T_NATIVE_FLOAT;
    case ElementType::float64:
      return H5T_NATIVE_DOUBLE;
    case ElementType::int32:
      return H5T_NATIVE_INT32;
    case ElementType::int64:
      return H5T_NATIVE_INT64;
    case ElementType::other:
      break;
  }
  throw Error("no memory type for an unsupported element type");
}

hid_t file_type(ElementType type) {
  switch (type) {
    case ElementType::float32:
      return H5T_IEEE_F32LE;
    case ElementType::float64:
      return H5T_IEEE_F64LE;
    case ElementType::int32:
      return H5T_STD_I32LE;
    case ElementType::int64:
      return H5T_STD_I64LE;
    case ElementType::other:
      break;
  }
  throw Error("no file type for an unsupported element type");
}

bool is_floating(ElementType type) {
  return type == ElementType::float32 || type == ElementType::float64;
}

bool is_integer(ElementType type) {
  return type == ElementType::int32 || type == ElementType::int64;
}

}  // namespace element_types
}  // namespace sinkgrad::h5
