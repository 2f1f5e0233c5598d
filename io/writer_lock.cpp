#include "io/writer_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/error.hpp"

namespace sinkgrad {
namespace {

std::string holder_of(int fd) {
  char text[512] = {};
  const ssize_t size = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder(text, size > 0 ? static_cast<std::size_t>(size) : 0);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  for (char& c : holder)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return holder.empty() ? "another process" : holder;
}

std::string this_writer() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  char since[32] = "?";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (::gmtime_r(&now, &utc) != nullptr)
    std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "pid " + std::to_string(::getpid()) + " on host " + host + " since " + since + "\n";
}

}  // namespace

WriterLock::WriterLock(const std::string& file_path) {
  const std::string path = lock_path(file_path);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error("cannot create the lock file '" + path + "' (" + std::strerror(errno) +
                "); sinkgrad writes '" + file_path + "' only while it holds that lock");
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int failure = errno;
    const std::string holder = failure == EWOULDBLOCK ? holder_of(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (failure == EWOULDBLOCK)
      throw Error("'" + file_path + "' is being written by " + holder + " (lock file '" + path +
                  "'); wait for it to finish, or give another output");
    throw Error("cannot lock '" + path + "' (" + std::strerror(failure) + ")");
  }
  const std::string writer = this_writer();
  // The holder text is only for the message: failing to write it does not stop the writer.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, writer.data(), writer.size(), 0);
  }
}

void WriterLock::refuse_while_written(const std::string& file_path) {
  const std::string path = lock_path(file_path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // never written by sinkgrad, or the lock file is unreadable: no writer
  int result = 0;
  while ((result = ::flock(fd, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {
  }
  const bool held = result != 0 && errno == EWOULDBLOCK;
  const std::string holder = held ? holder_of(fd) : "";
  ::close(fd);  // releases the shared lock, if taken
  if (held)
    throw Error("'" + file_path + "' is being written by " + holder + " (lock file '" + path +
                "'); read it once that run has finished or stopped");
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace sinkgrad
