#pragma once
// The HDF5 file driver under every file sinkgrad writes (internal to io; File uses it).
//
// It reads and writes like HDF5's default POSIX driver (sec2), and adds two things:
//   - a write that fails (a full disk, a file-size limit) is recorded in the WriteSession and
//     reported to HDF5 as done, and so is every later write, which is discarded. HDF5 1.10
//     handles a failed write badly: a dataset whose close failed is closed again at exit and
//     crashes (SIGSEGV), a failed flush is retried at close. File::flush reports the failure;
//   - with an UndoJournal, every overwrite is recorded first, so that closing the file after a
//     failure (or after the owner gave up on it) rolls it back to its last commit.
// The file it writes is a plain HDF5 file (no driver information in the superblock).

#include <memory>
#include <optional>
#include <string>

#include "io/hdf5_handle.hpp"
#include "io/undo_journal.hpp"

namespace sinkgrad::h5 {

struct WriteSession {
  std::optional<UndoJournal> journal;  // set for a file changed in place
  int fd = -1;                         // the open file, set by the driver
  bool failed = false;                 // a write failed, or the owner gave up: writes discarded
  std::string failure;                 // why the first write failed ("No space left on device")
};

// A file access property list for the driver; `session` must outlive the H5Fopen / H5Fcreate
// call that uses it (the open file keeps its own reference).
Handle write_access_plist(const std::shared_ptr<WriteSession>& session);

}  // namespace sinkgrad::h5
