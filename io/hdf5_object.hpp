#pragma once
// An open HDF5 object (a file's root group, a group or a dataset) that knows its file and its
// path inside the file, so that every error message can name both. Attributes
// (hdf5_attribute.hpp) attach to any Object.

#include <string>

#include "io/hdf5_handle.hpp"

namespace sinkgrad::h5 {

class Object {
 public:
  hid_t id() const { return handle_.get(); }
  const std::string& file_path() const { return file_path_; }
  const std::string& path() const { return path_; }  // "/" for the root group

  // "file 'out.h5'" for the root, "group '/runs/run_0001' in file 'log.h5'" and
  // "dataset '/logits' in file 'in.h5'" otherwise.
  std::string describe() const;
  // The in-file path of a child of this object: "/logits", "/runs/run_0001".
  std::string child_path(const std::string& name) const;

 protected:
  Object() = default;
  Object(Handle handle, std::string kind, std::string file_path, std::string path)
      : handle_(std::move(handle)),
        kind_(std::move(kind)),
        file_path_(std::move(file_path)),
        path_(std::move(path)) {}

  Handle handle_;
  std::string kind_;  // "group", "dataset"
  std::string file_path_;
  std::string path_;
};

// "'in.h5'": file names quoted the same way in every message.
std::string quoted(const std::string& text);

}  // namespace sinkgrad::h5
