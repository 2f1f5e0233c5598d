#include "io/hdf5_file.hpp"

#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "io/hdf5_write_driver.hpp"

namespace sinkgrad::h5 {
namespace {

std::shared_ptr<WriteSession> new_session(const std::string& path, File::Journal journal) {
  auto session = std::make_shared<WriteSession>();
  if (journal == File::Journal::undo) session->journal.emplace(path);
  return session;
}

}  // namespace

File::File(Handle file, Handle root, std::string path, std::shared_ptr<WriteSession> session)
    : Group(std::move(root), std::move(path), "/"),
      file_(std::move(file)),
      session_(std::move(session)) {}

File File::open(const std::string& path, Mode mode, Journal journal) {
  silence_hdf5_error_printing();
  std::error_code ec;
  if (journal == Journal::undo) UndoJournal::recover(path);
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
  std::shared_ptr<WriteSession> session;
  Handle plist;
  if (mode == Mode::read_write) {
    session = new_session(path, journal);
    plist = write_access_plist(session);
  }
  const hid_t access = plist.valid() ? plist.get() : H5P_DEFAULT;
  const unsigned flags = mode == Mode::read_only ? H5F_ACC_RDONLY : H5F_ACC_RDWR;
  Handle file(checked(
      H5Fopen(path.c_str(), flags, access),
      "cannot open HDF5 file " + quoted(path) + (mode == Mode::read_write ? " for writing" : "")));
  Handle root(checked(H5Gopen2(file.get(), "/", H5P_DEFAULT),
                      "cannot open the root group of file " + quoted(path)));
  return File(std::move(file), std::move(root), path, std::move(session));
}

File File::create(const std::string& path, Exists exists, Journal journal) {
  silence_hdf5_error_printing();
  std::error_code ec;
  if (journal == Journal::undo) UndoJournal::recover(path);
  if (exists == Exists::fail && std::filesystem::exists(path, ec))
    throw Error("cannot create file " + quoted(path) + ": it already exists");
  const unsigned flags = exists == Exists::fail ? H5F_ACC_EXCL : H5F_ACC_TRUNC;
  std::shared_ptr<WriteSession> session = new_session(path, journal);
  const Handle access = write_access_plist(session);
  Handle file(checked(H5Fcreate(path.c_str(), flags, H5P_DEFAULT, access.get()),
                      "cannot create HDF5 file " + quoted(path)));
  Handle root(checked(H5Gopen2(file.get(), "/", H5P_DEFAULT),
                      "cannot open the root group of file " + quoted(path)));
  return File(std::move(file), std::move(root), path, std::move(session));
}

void File::flush() const {
  const std::string message = "cannot write file " + quoted(file_path());
  const herr_t status = H5Fflush(file_.get(), H5F_SCOPE_GLOBAL);
  // A write the driver discarded after an earlier failure reports success to HDF5.
  if (session_ && session_->failed) {
    take_hdf5_reason();
    throw Error(message + ": " + session_->failure);
  }
  checked_status(status, message);
}

void File::commit() const {
  flush();
  if (session_ && session_->journal && !session_->journal->commit())
    throw Error("cannot remove the journal of file " + quoted(file_path()));
}

void File::abandon() const {
  if (session_) session_->failed = true;
}

}  // namespace sinkgrad::h5
