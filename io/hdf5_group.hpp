#pragma once
// A group: navigation (open, create, list, remove children). A File (hdf5_file.hpp) is its own
// root group, so everything here works on a file too. Child names are single link names or
// relative paths ("runs/run_0001"), or absolute ones ("/runs/run_0001", from the file's root);
// "/" separates levels.

#include <string>
#include <vector>

#include "io/hdf5_object.hpp"

namespace sinkgrad::h5 {

class Group : public Object {
 public:
  Group() = default;

  bool has(const std::string& name) const;  // a link of that name exists (any kind)
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  // Names of the direct children, in name order.
  std::vector<std::string> children() const;

  Group open_group(const std::string& name) const;     // throws when missing or not a group
  Group create_group(const std::string& name) const;   // throws when the name is taken
  Group require_group(const std::string& name) const;  // opens, or creates when missing
  void remove(const std::string& name) const;          // unlinks a child (throws when missing)

  // Throws "dataset 'x' is missing from file 'f' (it holds: a, b)" unless a dataset of that
  // name exists.
  void require_dataset(const std::string& name) const;

 protected:
  Group(Handle handle, std::string file_path, std::string path)
      : Object(std::move(handle), "group", std::move(file_path), std::move(path)) {}
};

}  // namespace sinkgrad::h5
