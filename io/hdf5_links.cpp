#include "io/hdf5_links.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.hpp"

namespace sinkgrad::h5 {
namespace {

namespace fs = std::filesystem;

// Links that lead to links (chains, cycles) are followed this deep, then refused.
constexpr int max_depth = 16;

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string joined(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
  std::string path;
  for (std::size_t k = from; k < to; ++k) path += "/" + parts[k];
  return path.empty() ? "/" : path;
}

std::string link_value(const File& file, const std::string& path, std::size_t size) {
  std::vector<char> value(size + 1, '\0');
  checked_status(H5Lget_val(file.id(), path.c_str(), value.data(), value.size(), H5P_DEFAULT),
                 "cannot read link " + quoted(path) + " in file " + quoted(file.file_path()));
  return std::string(value.data(), value.size());
}

// Where HDF5 finds `name`, linked from `from` (see the header); throws when it would hang on
// a non-regular file or finds nothing.
std::string locate(const std::string& name, const std::string& from, const char* prefix_variable,
                   const std::string& via) {
  const fs::path directory = fs::absolute(fs::path(from)).parent_path();
  const fs::path given(name);
  const std::string base = given.is_absolute() ? given.filename().string() : name;
  std::vector<std::string> candidates;
  if (given.is_absolute()) candidates.push_back(name);
  if (const char* prefixes = std::getenv(prefix_variable); prefixes != nullptr) {
    std::string list = prefixes;
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      std::string prefix = list.substr(start, end - start);
      if (const auto origin = prefix.find("${ORIGIN}"); origin != std::string::npos)
        prefix.replace(origin, 9, directory.string());
      if (!prefix.empty()) candidates.push_back((fs::path(prefix) / base).string());
      start = end + 1;
    }
  }
  candidates.push_back((directory / base).string());
  candidates.push_back(base);
  for (const std::string& candidate : candidates) {
    struct stat info {};
    if (::stat(candidate.c_str(), &info) != 0) continue;
    if (!S_ISREG(info.st_mode))
      throw Error(via + " reads from " + quoted(candidate) +
                  ", which is not a regular file (a FIFO, device or directory): reading it "
                  "could block forever; refused");
    if (H5Fis_hdf5(candidate.c_str()) > 0) return candidate;
    take_hdf5_reason();
  }
  throw Error(via + " reads from " + quoted(name) +
              ", which does not exist (or is not an HDF5 file) where HDF5 looks for it (" +
              quoted(directory.string()) + ", the current directory" +
              (std::getenv(prefix_variable) ? std::string(", ") + prefix_variable : "") +
              "); refused rather than reading a fill value or failing later");
}

void resolve(const File& file, const std::string& path, bool required, int depth,
             std::vector<LinkedFile>& found);

void virtual_sources(const File& file, const std::string& path, int depth,
                     std::vector<LinkedFile>& found) {
  const Handle dataset(
      checked(H5Dopen2(file.id(), path.c_str(), H5P_DEFAULT),
              "cannot open dataset " + quoted(path) + " in file " + quoted(file.file_path())));
  const Handle create(checked(H5Dget_create_plist(dataset.get()),
                              "cannot read the layout of dataset " + quoted(path)));
  if (H5Pget_layout(create.get()) != H5D_VIRTUAL) return;
  std::size_t count = 0;
  checked_status(H5Pget_virtual_count(create.get(), &count),
                 "cannot read the mappings of virtual dataset " + quoted(path));
  const std::string via =
      "the virtual dataset " + quoted(path) + " in file " + quoted(file.file_path());
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<char> name(
        static_cast<std::size_t>(H5Pget_virtual_filename(create.get(), k, nullptr, 0)) + 1);
    std::vector<char> source(
        static_cast<std::size_t>(H5Pget_virtual_dsetname(create.get(), k, nullptr, 0)) + 1);
    H5Pget_virtual_filename(create.get(), k, name.data(), name.size());
    H5Pget_virtual_dsetname(create.get(), k, source.data(), source.size());
    const std::string file_name(name.data()), dataset_name(source.data());
    if (file_name == ".") {  // a source in the same file
      resolve(file, dataset_name, true, depth + 1, found);
      continue;
    }
    const std::string located = locate(file_name, file.file_path(), "HDF5_VDS_PREFIX", via);
    found.push_back({located, via});
    resolve(File::open(located), dataset_name, true, depth + 1, found);
  }
}

// Walks `path` one link at a time: a hard link is entered, a soft link replaced by its target,
// an external link checked and then followed into its file; the dataset at the end is checked
// for virtual sources. `required`: a missing object is an error (a VDS source).
void resolve(const File& file, const std::string& path, bool required, int depth,
             std::vector<LinkedFile>& found) {
  const std::string where = quoted(path) + " in file " + quoted(file.file_path());
  if (depth > max_depth)
    throw Error("the links to " + where + " are nested deeper than " + std::to_string(max_depth) +
                " (a cycle?); refused");
  const std::vector<std::string> parts = components(path);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::string prefix = joined(parts, 0, k + 1);
    const std::string rest = k + 1 < parts.size() ? joined(parts, k + 1, parts.size()) : "";
    H5L_info_t info;
    if (H5Lexists(file.id(), prefix.c_str(), H5P_DEFAULT) <= 0 ||
        H5Lget_info(file.id(), prefix.c_str(), &info, H5P_DEFAULT) < 0) {
      take_hdf5_reason();
      if (required)
        throw Error("the source dataset " + where +
                    " of a virtual dataset is missing: HDF5 would read its fill value; refused");
      return;
    }
    if (info.type == H5L_TYPE_HARD) continue;
    const std::string link = "the link " + quoted(prefix) + " in file " + quoted(file.file_path());
    if (info.type == H5L_TYPE_SOFT) {
      const std::string target = link_value(file, prefix, info.u.val_size).c_str();
      if (target.empty()) throw Error(link + " is an empty soft link; refused");
      const std::string parent = joined(parts, 0, k);
      resolve(file, (target.front() == '/' ? target : parent + "/" + target) + rest, required,
              depth + 1, found);
      return;
    }
    if (info.type != H5L_TYPE_EXTERNAL)
      throw Error(link + " is a user-defined link, which sinkgrad does not follow; refused");
    const std::string value = link_value(file, prefix, info.u.val_size);
    const char* file_name = nullptr;
    const char* object = nullptr;
    checked_status(H5Lunpack_elink_val(value.data(), value.size(), nullptr, &file_name, &object),
                   "cannot read " + link);
    const std::string via =
        "the external link " + quoted(prefix) + " in file " + quoted(file.file_path());
    const std::string located = locate(file_name, file.file_path(), "HDF5_EXT_PREFIX", via);
    found.push_back({located, via});
    resolve(File::open(located), std::string(object) + rest, required, depth + 1, found);
    return;
  }
  const std::string absolute = joined(parts, 0, parts.size());
  H5O_info_t object;
  if (H5Oget_info_by_name(file.id(), absolute.c_str(), &object, H5P_DEFAULT) >= 0 &&
      object.type == H5O_TYPE_DATASET)
    virtual_sources(file, absolute, depth, found);
  take_hdf5_reason();
}

}  // namespace

std::vector<LinkedFile> linked_files(const File& file, const std::vector<std::string>& datasets) {
  std::vector<LinkedFile> found;
  for (const std::string& dataset : datasets) resolve(file, dataset, false, 0, found);
  return found;
}

void refuse_output_among(const std::string& output, const std::vector<LinkedFile>& files) {
  struct stat target {};
  if (::stat(output.c_str(), &target) != 0) return;  // a new file is nobody's input
  for (const LinkedFile& file : files) {
    struct stat info {};
    if (::stat(file.path.c_str(), &info) == 0 && info.st_dev == target.st_dev &&
        info.st_ino == target.st_ino)
      throw Error("cannot write output " + quoted(output) + ": " + file.via + " reads from it " +
                  "(writing it would destroy the input); give another output");
  }
}

}  // namespace sinkgrad::h5
