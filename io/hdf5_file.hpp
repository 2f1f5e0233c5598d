#pragma once
// An HDF5 file, which is also its root group (hdf5_group.hpp): open an existing file for
// reading or appending, or create a new one; flush to make what was written so far durable
// (e.g. after each run of an experiment log).
//
//   auto in = h5::File::open("in.h5");                         // read-only
//   auto log = h5::File::open("log.h5", h5::File::Mode::read_write);
//   auto out = h5::File::create("out.h5", h5::File::Exists::replace);
//
// Opening checks that the file exists and is HDF5 before HDF5 sees it, so that the two most
// common mistakes get plain messages.
//
// A file opened for writing goes through io's own driver (hdf5_write_driver.hpp): a failed
// write (a full disk, a file-size limit) is reported once, and the file can then still be closed
// without HDF5 crashing on its retried flush. With Journal::undo (a log changed in place) the
// file also goes back to its last commit() when a write fails or the owner abandon()s it:
//
//   auto log = h5::File::open("log.h5", h5::File::Mode::read_write, h5::File::Journal::undo);
//   try { ...write a run...; log.commit(); } catch (...) { log.abandon(); throw; }

#include <memory>
#include <string>

#include "io/hdf5_group.hpp"

namespace sinkgrad::h5 {

struct WriteSession;  // hdf5_write_driver.hpp

class File : public Group {
 public:
  enum class Mode { read_only, read_write };
  enum class Exists { fail, replace };  // what create() does with an existing file
  enum class Journal { none, undo };    // undo: a rollback journal beside the file

  File() = default;

  // A journaled open first rolls back what a writer that died left (undo_journal.hpp).
  static File open(const std::string& path, Mode mode = Mode::read_only,
                   Journal journal = Journal::none);
  static File create(const std::string& path, Exists exists = Exists::fail,
                     Journal journal = Journal::none);

  // Writes HDF5's buffers for this file to the operating system; throws when a write failed
  // now or earlier (naming the cause, e.g. "No space left on device").
  void flush() const;
  // flush(), then the present state is the one a failure goes back to.
  void commit() const;
  // Nothing more is written; the file goes back to its last commit once it is closed (every
  // handle on it released). For a file without journal only the discarding applies.
  void abandon() const;
  // Releases this handle (the file closes once no group or dataset of it is open either).
  void close() { *this = File(); }

 private:
  File(Handle file, Handle root, std::string path, std::shared_ptr<WriteSession> session);
  Handle file_;
  std::shared_ptr<WriteSession> session_;  // null for a file opened read-only
};

}  // namespace sinkgrad::h5
