#include "io/hdf5_group.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace sinkgrad::h5 {
namespace {

// H5Lexists fails (rather than returning false) when an intermediate level is missing, so the
// path is checked level by level.
bool link_exists(hid_t group, const std::string& name) {
  if (name.empty()) return false;
  std::string prefix = name.front() == '/' ? "/" : "";  // absolute paths start at the root
  size_t start = prefix.size();
  bool any = false;
  while (start < name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (end > start) {
      if (!prefix.empty() && prefix.back() != '/') prefix += '/';
      prefix.append(name, start, end - start);
      if (H5Lexists(group, prefix.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
      any = true;
    }
    start = end + 1;
  }
  return any;
}

H5O_type_t object_type(hid_t group, const std::string& name) {
  H5O_info_t info;
  if (H5Oget_info_by_name(group, name.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5O_TYPE_UNKNOWN;
  }
  return info.type;
}

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

std::string listing(const std::vector<std::string>& names) {
  if (names.empty()) return "it is empty";
  std::string text = "it holds: ";
  for (size_t k = 0; k < names.size(); ++k) text += (k ? ", " : "") + names[k];
  return text;
}

}  // namespace

bool Group::has(const std::string& name) const {
  return link_exists(id(), name);
}

bool Group::has_group(const std::string& name) const {
  return has(name) && object_type(id(), name) == H5O_TYPE_GROUP;
}

bool Group::has_dataset(const std::string& name) const {
  return has(name) && object_type(id(), name) == H5O_TYPE_DATASET;
}

std::vector<std::string> Group::children() const {
  std::vector<std::string> names;
  checked_status(H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names),
                 "cannot list the children of " + describe());
  return names;
}

Group Group::open_group(const std::string& name) const {
  if (!has(name))
    throw Error("group " + quoted(child_path(name)) + " is missing from file " +
                quoted(file_path()));
  if (!has_group(name))
    throw Error(quoted(child_path(name)) + " in file " + quoted(file_path()) + " is not a group");
  Handle handle(
      checked(H5Gopen2(id(), name.c_str(), H5P_DEFAULT),
              "cannot open group " + quoted(child_path(name)) + " in file " + quoted(file_path())));
  return Group(std::move(handle), file_path(), child_path(name));
}

Group Group::create_group(const std::string& name) const {
  if (has(name))
    throw Error("cannot create group " + quoted(child_path(name)) + " in file " +
                quoted(file_path()) + ": the name is taken");
  // Intermediate groups are created as needed ("runs/run_0001").
  Handle plist(checked(H5Pcreate(H5P_LINK_CREATE), "cannot create a property list"));
  H5Pset_create_intermediate_group(plist.get(), 1);
  Handle handle(checked(
      H5Gcreate2(id(), name.c_str(), plist.get(), H5P_DEFAULT, H5P_DEFAULT),
      "cannot create group " + quoted(child_path(name)) + " in file " + quoted(file_path())));
  return Group(std::move(handle), file_path(), child_path(name));
}

Group Group::require_group(const std::string& name) const {
  return has(name) ? open_group(name) : create_group(name);
}

void Group::remove(const std::string& name) const {
  if (!has(name))
    throw Error("cannot remove " + quoted(child_path(name)) + " from file " + quoted(file_path()) +
                ": it does not exist");
  checked_status(H5Ldelete(id(), name.c_str(), H5P_DEFAULT),
                 "cannot remove " + quoted(child_path(name)) + " from file " + quoted(file_path()));
}

void Group::require_dataset(const std::string& name) const {
  if (!has(name))
    throw Error("dataset " + quoted(child_path(name)) + " is missing from " + describe() + " (" +
                listing(children()) + ")");
  if (!has_dataset(name))
    throw Error(quoted(child_path(name)) + " in file " + quoted(file_path()) + " is not a dataset");
}

}  // namespace sinkgrad::h5
