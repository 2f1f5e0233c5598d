#pragma once
// Attributes on any Object (a file's root, a group, a dataset): text, integers, numbers and
// short arrays of them, the metadata of an output file or of one run in an experiment log.
//
//   h5::write_string_attribute(file, "solver", "cg_corrected");
//   h5::write_int_attribute(file, "T", 20);
//   h5::write_double_attribute(run, "logit_scale", 4.0);
//   h5::write_int_array_attribute(run, "sizes", {4, 8, 16});
//   std::string s = h5::read_string_attribute(file, "solver");
//
// Text is stored as variable-length UTF-8 strings (h5py reads them as str); integers as int64,
// numbers as float64. Writing an attribute that exists replaces it. Reading checks the kind:
// a string attribute is not read as a number, nor the reverse (an integer attribute may be read
// as a double).

#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5_object.hpp"

namespace sinkgrad::h5 {

bool has_attribute(const Object& object, const std::string& name);
std::vector<std::string> attribute_names(const Object& object);  // in name order

void write_string_attribute(const Object& object, const std::string& name,
                            const std::string& value);
void write_int_attribute(const Object& object, const std::string& name, std::int64_t value);
void write_double_attribute(const Object& object, const std::string& name, double value);
void write_int_array_attribute(const Object& object, const std::string& name,
                               const std::vector<std::int64_t>& values);
void write_double_array_attribute(const Object& object, const std::string& name,
                                  const std::vector<double>& values);

// Each throws when the attribute is missing or of another kind.
std::string read_string_attribute(const Object& object, const std::string& name);
std::int64_t read_int_attribute(const Object& object, const std::string& name);
double read_double_attribute(const Object& object, const std::string& name);
std::vector<std::int64_t> read_int_array_attribute(const Object& object, const std::string& name);
std::vector<double> read_double_array_attribute(const Object& object, const std::string& name);

}  // namespace sinkgrad::h5
