#include "io/undo_journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace sinkgrad {
namespace {

constexpr char magic[8] = {'s', 'g', 'u', 'n', 'd', 'o', '0', '1'};
constexpr std::size_t header_size = sizeof magic + 8;

bool write_all(int fd, const void* data, std::size_t size, off_t offset = -1) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t done = offset < 0 ? ::write(fd, bytes, size) : ::pwrite(fd, bytes, size, offset);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    bytes += done;
    size -= static_cast<std::size_t>(done);
    if (offset >= 0) offset += done;
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t size, off_t offset) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t done = ::pread(fd, bytes, size, offset);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    bytes += done;
    size -= static_cast<std::size_t>(done);
    offset += done;
  }
  return true;
}

std::uint64_t number_at(const std::vector<char>& bytes, std::size_t at) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

std::vector<char> whole_file(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return {};
  std::vector<char> bytes(static_cast<std::size_t>(info.st_size));
  if (!read_all(fd, bytes.data(), bytes.size(), 0)) return {};
  return bytes;
}

// Writes the journal's old bytes back, newest first, and truncates the file to the size it had
// at the commit. An incomplete last record is ignored: its overwrite never started.
bool apply(int fd, const std::vector<char>& journal, const std::string& file_path) {
  if (journal.size() < header_size) return true;  // nothing was changed yet
  const std::uint64_t committed = number_at(journal, sizeof magic);
  std::vector<std::size_t> records;
  for (std::size_t at = header_size; at + 16 <= journal.size();) {
    const std::uint64_t length = number_at(journal, at + 8);
    if (length > journal.size() - at - 16) break;
    records.push_back(at);
    at += 16 + static_cast<std::size_t>(length);
  }
  for (auto record = records.rbegin(); record != records.rend(); ++record)
    if (!write_all(fd, journal.data() + *record + 16,
                   static_cast<std::size_t>(number_at(journal, *record + 8)),
                   static_cast<off_t>(number_at(journal, *record))))
      return false;
  if (::ftruncate(fd, static_cast<off_t>(committed)) != 0) return false;
  // A file never committed holds nothing worth keeping (not even an HDF5 header).
  if (committed == 0) ::unlink(file_path.c_str());
  return true;
}

}  // namespace

UndoJournal::UndoJournal(std::string file_path)
    : file_path_(std::move(file_path)), journal_path_(journal_path(file_path_)) {}

void UndoJournal::recover(const std::string& file_path) {
  const std::string path = journal_path(file_path);
  const int journal = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (journal < 0) {
    if (errno == ENOENT) return;
    throw Error("cannot read the journal '" + path + "' (" + std::strerror(errno) + ")");
  }
  const std::vector<char> bytes = whole_file(journal);
  ::close(journal);
  if (bytes.size() >= sizeof magic && std::memcmp(bytes.data(), magic, sizeof magic) != 0)
    throw Error("'" + path + "' is not a sinkgrad journal; move it away to use '" + file_path +
                "'");
  const int fd = ::open(file_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT)
    throw Error("cannot roll back '" + file_path + "' (" + std::strerror(errno) + ")");
  const bool restored = fd < 0 || apply(fd, bytes, file_path);
  const int failure = errno;
  if (fd >= 0) ::close(fd);
  if (!restored)
    throw Error("cannot roll back '" + file_path + "' to its last complete write with '" + path +
                "' (" + std::strerror(failure) + "); free space and try again");
  ::unlink(path.c_str());
}

bool UndoJournal::begin(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return false;
  committed_size_ = static_cast<std::uint64_t>(info.st_size);
  journal_ = ::open(journal_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (journal_ < 0) return false;
  char header[header_size];
  std::memcpy(header, magic, sizeof magic);
  std::memcpy(header + sizeof magic, &committed_size_, 8);
  if (write_all(journal_, header, sizeof header)) return true;
  const int failure = errno;
  ::close(journal_);
  ::unlink(journal_path_.c_str());
  journal_ = -1;
  errno = failure;
  return false;
}

bool UndoJournal::save(int fd, std::uint64_t offset, std::uint64_t size) {
  if (journal_ < 0 && !begin(fd)) return false;
  if (offset >= committed_size_ || size == 0) return true;  // appended bytes: truncation undoes
  const std::uint64_t end = std::min(offset + size, committed_size_);
  auto covering = saved_.upper_bound(offset);
  if (covering != saved_.begin() && std::prev(covering)->second >= end) return true;
  std::vector<char> record(16 + static_cast<std::size_t>(end - offset));
  const std::uint64_t length = end - offset;
  std::memcpy(record.data(), &offset, 8);
  std::memcpy(record.data() + 8, &length, 8);
  if (!read_all(fd, record.data() + 16, static_cast<std::size_t>(length),
                static_cast<off_t>(offset)) ||
      !write_all(journal_, record.data(), record.size()))
    return false;
  std::uint64_t& recorded = saved_[offset];
  recorded = std::max(recorded, end);
  return true;
}

bool UndoJournal::commit() {
  if (journal_ < 0) return true;
  ::close(journal_);
  journal_ = -1;
  saved_.clear();
  return ::unlink(journal_path_.c_str()) == 0 || errno == ENOENT;
}

bool UndoJournal::rollback(int fd) {
  if (journal_ < 0) return true;
  const std::vector<char> bytes = whole_file(journal_);
  if (bytes.size() < header_size || !apply(fd, bytes, file_path_)) return false;
  ::close(journal_);
  journal_ = -1;
  saved_.clear();
  ::unlink(journal_path_.c_str());
  return true;
}

}  // namespace sinkgrad
