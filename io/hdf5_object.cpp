#include "io/hdf5_object.hpp"

namespace sinkgrad::h5 {

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

std::string Object::describe() const {
  if (path_ == "/") return "file " + quoted(file_path_);
  return kind_ + " " + quoted(path_) + " in file " + quoted(file_path_);
}

std::string Object::child_path(const std::string& name) const {
  if (!name.empty() && name.front() == '/') return name;  // already absolute
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

}  // namespace sinkgrad::h5
