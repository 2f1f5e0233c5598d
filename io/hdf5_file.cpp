#include "io/hdf5_file.hpp"

#include <filesystem>
#include <system_error>

#include "core/error.hpp"

namespace sinkgrad::h5 {

File::File(Handle file, Handle root, std::string path)
    : Group(std::move(root), std::move(path), "/"), file_(std::move(file)) {}

File File::open(const std::string& path, Mode mode) {
  silence_hdf5_error_printing();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error("file " + quoted(path) + " does not exist");
  if (std::filesystem::is_directory(path, ec))
    throw Error(quoted(path) + " is a directory, not an HDF5 file");
  // A FIFO or device would block or stream forever: inputs are read from regular files only.
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(quoted(path) +
                " is not a regular file (a device, FIFO or socket), not an HDF5 file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) throw Error("file " + quoted(path) + " is not an HDF5 file");
  if (is_hdf5 < 0) throw_hdf5_error("cannot read file " + quoted(path));
  const unsigned flags = mode == Mode::read_only ? H5F_ACC_RDONLY : H5F_ACC_RDWR;
  Handle file(checked(
      H5Fopen(path.c_str(), flags, H5P_DEFAULT),
      "cannot open HDF5 file " + quoted(path) + (mode == Mode::read_write ? " for writing" : "")));
  Handle root(checked(H5Gopen2(file.get(), "/", H5P_DEFAULT),
                      "cannot open the root group of file " + quoted(path)));
  return File(std::move(file), std::move(root), path);
}

File File::create(const std::string& path, Exists exists) {
  silence_hdf5_error_printing();
  std::error_code ec;
  if (exists == Exists::fail && std::filesystem::exists(path, ec))
    throw Error("cannot create file " + quoted(path) + ": it already exists");
  const unsigned flags = exists == Exists::fail ? H5F_ACC_EXCL : H5F_ACC_TRUNC;
  Handle file(checked(H5Fcreate(path.c_str(), flags, H5P_DEFAULT, H5P_DEFAULT),
                      "cannot create HDF5 file " + quoted(path)));
  Handle root(checked(H5Gopen2(file.get(), "/", H5P_DEFAULT),
                      "cannot open the root group of file " + quoted(path)));
  return File(std::move(file), std::move(root), path);
}

void File::flush() const {
  checked_status(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL),
                 "cannot flush file " + quoted(file_path()));
}

}  // namespace sinkgrad::h5
