// The undo journal on its own: bytes overwritten and appended after a commit are undone by
// rollback() and, for a process that died, by recover(); a commit makes the new bytes stay.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "io/undo_journal.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad {
namespace {

using testing::read_text;
using testing::ScratchDir;
using testing::write_text;

// What the driver does for one write: save the old bytes, then write.
void overwrite(UndoJournal& journal, int fd, off_t offset, const std::string& bytes) {
  ASSERT_TRUE(journal.save(fd, static_cast<std::uint64_t>(offset), bytes.size()));
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), offset), static_cast<ssize_t>(bytes.size()));
}

TEST(UndoJournal, RollbackAndRecoverRestoreTheLastCommit) {
  const ScratchDir dir;
  const std::string path = dir.file("data");
  write_text(path, "0123456789");
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  UndoJournal journal(path);
  overwrite(journal, fd, 2, "ab");
  overwrite(journal, fd, 8, "XYZW");  // past the end: undone by truncation
  ASSERT_TRUE(journal.commit());
  EXPECT_EQ(read_text(path), "01ab4567XYZW");
  EXPECT_FALSE(std::filesystem::exists(UndoJournal::journal_path(path)));

  overwrite(journal, fd, 0, "--");
  overwrite(journal, fd, 1, "++++");  // overlaps the first: newest undone first
  overwrite(journal, fd, 12, "tail");
  ASSERT_TRUE(journal.rollback(fd));
  EXPECT_EQ(read_text(path), "01ab4567XYZW");

  // A process that dies mid-write leaves the journal; the next writer's recover() rolls back.
  overwrite(journal, fd, 4, "????");
  ::close(fd);
  ASSERT_TRUE(std::filesystem::exists(UndoJournal::journal_path(path)));
  UndoJournal::recover(path);
  EXPECT_EQ(read_text(path), "01ab4567XYZW");
  EXPECT_FALSE(std::filesystem::exists(UndoJournal::journal_path(path)));
  UndoJournal::recover(path);  // nothing to do

  // A journal that is not ours is refused rather than applied.
  write_text(UndoJournal::journal_path(path), "something else entirely");
  EXPECT_THROW(UndoJournal::recover(path), Error);
}

TEST(UndoJournal, AFileNeverCommittedIsRemoved) {
  const ScratchDir dir;
  const std::string path = dir.file("new");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0);
  UndoJournal journal(path);
  overwrite(journal, fd, 0, "header");
  ASSERT_TRUE(journal.rollback(fd));
  ::close(fd);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace sinkgrad
