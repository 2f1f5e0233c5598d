#pragma once
// An exclusive lock of sinkgrad's own on a file written in place (a study log), held for the
// whole write: flock on `<file>.lock` beside it, which holds "pid P on host H since T" for the
// message a second writer gets. HDF5's own locking is often off (HDF5_USE_FILE_LOCKING=FALSE
// on NFS and Lustre), and two writers then destroy the file; this lock does not depend on it.
//
// The kernel releases a flock when its process ends, however it ends, so the lock file a dead
// writer left does not block anyone. The lock file is never removed: a writer that removed it
// would let the next one lock a new file while a third still holds the old one.

#include <string>

namespace sinkgrad {

class WriterLock {
 public:
  // Throws Error "... is being written by pid P on host H since T ..." when another process
  // holds the lock, or naming the cause when the lock file cannot be made.
  explicit WriterLock(const std::string& file_path);
  ~WriterLock();
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

  static std::string lock_path(const std::string& file_path) { return file_path + ".lock"; }

  // For a reader: throws the same Error when a writer holds the lock of file_path now (what it
  // would read is a log in the middle of a write); returns at once when none does.
  static void refuse_while_written(const std::string& file_path);

 private:
  int fd_ = -1;
};

}  // namespace sinkgrad
