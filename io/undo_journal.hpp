#pragma once
// A rollback journal for a file changed in place (a study log), so that a write that fails
// half-way (a full disk, a file-size limit, a killed process) leaves the file as it was at the
// last commit. HDF5 1.10 has no journal of its own: once a flush fails, some of its metadata is
// on disk and some is not, and the file can be unreadable.
//
// The journal is the file `<file>-journal` beside it. Before the first change after a commit it
// records the file's size; before any byte below that size is overwritten (or truncated away) it
// appends the old bytes. Commit removes the journal; rollback (or recover(), for a journal a
// dead process left) writes the old bytes back, newest first, and truncates the file to the
// recorded size. Appending below the recorded size never happens without a record, so an
// interrupted record means its overwrite never started.
//
// What it covers: the process ending or a write failing at any moment. Not covered: the
// operating system losing written pages (a power cut), as nothing is synced.

#include <cstdint>
#include <map>
#include <string>

namespace sinkgrad {

class UndoJournal {
 public:
  explicit UndoJournal(std::string file_path);

  // Rolls the file back to its last commit when a journal is beside it (a process died while
  // writing); a file that had never been committed (recorded size 0) is removed. Throws Error
  // when the journal is not one of ours or the rollback fails. Call it with the writer lock held.
  static void recover(const std::string& file_path);

  static std::string journal_path(const std::string& file_path) { return file_path + "-journal"; }

  // Called before bytes [offset, offset + size) of the open file `fd` are overwritten or
  // truncated away. Returns false (errno set) when the old bytes could not be saved: the
  // caller must not write then.
  bool save(int fd, std::uint64_t offset, std::uint64_t size);
  // The file's present state becomes the rollback point: the journal is removed.
  bool commit();
  // Back to the last commit (removes a never committed file). Returns false when that failed;
  // the journal then stays for recover().
  bool rollback(int fd);

 private:
  bool begin(int fd);

  std::string file_path_;
  std::string journal_path_;
  int journal_ = -1;  // open during a transaction
  std::uint64_t committed_size_ = 0;
  std::map<std::uint64_t, std::uint64_t> saved_;  // ranges already recorded: start -> end
};

}  // namespace sinkgrad
