#include "io/hdf5_attribute.hpp"

#include "core/error.hpp"

namespace sinkgrad::h5 {
namespace {

std::string where(const Object& object, const std::string& name) {
  return "attribute " + quoted(name) + " of " + object.describe();
}

// Creates (replacing an existing one) attribute `name` of the given file type and shape.
Handle create_attribute(const Object& object, const std::string& name, hid_t type,
                        const Handle& space) {
  if (has_attribute(object, name))
    checked_status(H5Adelete(object.id(), name.c_str()), "cannot replace " + where(object, name));
  return Handle(
      checked(H5Acreate2(object.id(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              "cannot create " + where(object, name)));
}

Handle vector_space(std::size_t count) {
  const hsize_t dims[1] = {count};
  return Handle(checked(H5Screate_simple(1, dims, nullptr), "cannot create a dataspace"));
}

Handle scalar_space() {
  return Handle(checked(H5Screate(H5S_SCALAR), "cannot create a dataspace"));
}

template <class T>
void write_numbers(const Object& object, const std::string& name, hid_t file_type,
                   hid_t memory_type, const T* values, const Handle& space) {
  const Handle attribute = create_attribute(object, name, file_type, space);
  checked_status(H5Awrite(attribute.get(), memory_type, values),
                 "cannot write " + where(object, name));
}

struct OpenAttribute {
  Handle attribute;
  Handle type;
  H5T_class_t type_class = H5T_NO_CLASS;
  std::size_t count = 0;  // elements (1 for a scalar)
};

OpenAttribute open_attribute(const Object& object, const std::string& name) {
  if (!has_attribute(object, name)) throw Error(where(object, name) + " is missing");
  OpenAttribute open;
  open.attribute = Handle(checked(H5Aopen(object.id(), name.c_str(), H5P_DEFAULT),
                                  "cannot open " + where(object, name)));
  open.type = Handle(
      checked(H5Aget_type(open.attribute.get()), "cannot read the type of " + where(object, name)));
  open.type_class = H5Tget_class(open.type.get());
  const Handle space(checked(H5Aget_space(open.attribute.get()),
                             "cannot read the shape of " + where(object, name)));
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_hdf5_error("cannot read the shape of " + where(object, name));
  open.count = static_cast<std::size_t>(count);
  return open;
}

template <class T>
std::vector<T> read_numbers(const Object& object, const std::string& name, bool allow_integer,
                            bool allow_float, hid_t memory_type, const char* expected) {
  const OpenAttribute open = open_attribute(object, name);
  const bool ok = (allow_integer && open.type_class == H5T_INTEGER) ||
                  (allow_float && open.type_class == H5T_FLOAT);
  if (!ok) throw Error(where(object, name) + " is not " + expected);
  std::vector<T> values(open.count);
  if (!values.empty())
    checked_status(H5Aread(open.attribute.get(), memory_type, values.data()),
                   "cannot read " + where(object, name));
  return values;
}

template <class T>
T single(std::vector<T> values, const Object& object, const std::string& name) {
  if (values.size() != 1)
    throw Error(where(object, name) + " holds " + std::to_string(values.size()) +
                " values, expected one");
  return values.front();
}

}  // namespace

bool has_attribute(const Object& object, const std::string& name) {
  const htri_t exists = H5Aexists(object.id(), name.c_str());
  if (exists < 0) throw_hdf5_error("cannot look up " + where(object, name));
  return exists > 0;
}

std::vector<std::string> attribute_names(const Object& object) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* attribute, const H5A_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->emplace_back(attribute);
    return 0;
  };
  checked_status(H5Aiterate2(object.id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names),
                 "cannot list the attributes of " + object.describe());
  return names;
}

void write_string_attribute(const Object& object, const std::string& name,
                            const std::string& value) {
  const Handle type(checked(H5Tcopy(H5T_C_S1), "cannot create a string type"));
  checked_status(H5Tset_size(type.get(), H5T_VARIABLE), "cannot create a string type");
  checked_status(H5Tset_cset(type.get(), H5T_CSET_UTF8), "cannot create a string type");
  const Handle attribute = create_attribute(object, name, type.get(), scalar_space());
  const char* text = value.c_str();
  checked_status(H5Awrite(attribute.get(), type.get(), &text),
                 "cannot write " + where(object, name));
}

void write_int_attribute(const Object& object, const std::string& name, std::int64_t value) {
  write_numbers(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, scalar_space());
}

void write_double_attribute(const Object& object, const std::string& name, double value) {
  write_numbers(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, scalar_space());
}

void write_int_array_attribute(const Object& object, const std::string& name,
                               const std::vector<std::int64_t>& values) {
  write_numbers(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, values.data(),
                vector_space(values.size()));
}

void write_double_array_attribute(const Object& object, const std::string& name,
                                  const std::vector<double>& values) {
  write_numbers(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data(),
                vector_space(values.size()));
}

std::string read_string_attribute(const Object& object, const std::string& name) {
  const OpenAttribute open = open_attribute(object, name);
  if (open.type_class != H5T_STRING) throw Error(where(object, name) + " is not a string");
  if (open.count != 1) throw Error(where(object, name) + " is not a single string");
  const htri_t variable = H5Tis_variable_str(open.type.get());
  if (variable < 0) throw_hdf5_error("cannot read the type of " + where(object, name));
  if (variable > 0) {
    const Handle memory_type(checked(H5Tcopy(H5T_C_S1), "cannot create a string type"));
    H5Tset_size(memory_type.get(), H5T_VARIABLE);
    H5Tset_cset(memory_type.get(), H5Tget_cset(open.type.get()));
    char* text = nullptr;
    checked_status(H5Aread(open.attribute.get(), memory_type.get(), &text),
                   "cannot read " + where(object, name));
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  // Fixed length: read the stored bytes, then cut at the first NUL (null-terminated or padded).
  const std::size_t size = H5Tget_size(open.type.get());
  std::string value(size, '\0');
  if (size > 0)
    checked_status(H5Aread(open.attribute.get(), open.type.get(), value.data()),
                   "cannot read " + where(object, name));
  const auto nul = value.find('\0');
  if (nul != std::string::npos) value.resize(nul);
  return value;
}

std::int64_t read_int_attribute(const Object& object, const std::string& name) {
  return single(read_int_array_attribute(object, name), object, name);
}

double read_double_attribute(const Object& object, const std::string& name) {
  return single(read_double_array_attribute(object, name), object, name);
}

std::vector<std::int64_t> read_int_array_attribute(const Object& object, const std::string& name) {
  return read_numbers<std::int64_t>(object, name, true, false, H5T_NATIVE_INT64,
                                    "an integer attribute");
}

std::vector<double> read_double_array_attribute(const Object& object, const std::string& name) {
  return read_numbers<double>(object, name, true, true, H5T_NATIVE_DOUBLE, "a numeric attribute");
}

}  // namespace sinkgrad::h5
