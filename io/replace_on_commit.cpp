#include "io/replace_on_commit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "io/output_policy.hpp"

namespace sinkgrad {
namespace {

std::string in_quotes(const std::string& text) {
  return "'" + text + "'";
}

// The permissions a newly created file would get (mkstemp uses 0600).
mode_t default_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

}  // namespace

ReplaceOnCommit::ReplaceOnCommit(std::string destination, const std::vector<std::string>& inputs)
    : destination_(std::move(destination)), inputs_(inputs) {
  namespace fs = std::filesystem;
  if (destination_.empty()) throw Error("the output file name is empty");
  // A symbolic link is written through: the temporary file goes next to its target.
  destination_ = checked_output_path(destination_, inputs_);
  const fs::path path(destination_);
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw Error("cannot write output " + in_quotes(destination_) + ": it is a directory");
  const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(directory, ec))
    throw Error("cannot write output " + in_quotes(destination_) + ": directory " +
                in_quotes(directory.string()) + " does not exist");
  std::string hidden_name = ".";
  hidden_name += path.filename().string();
  hidden_name += ".tmp.XXXXXX";
  const std::string pattern = (directory / hidden_name).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0)
    throw Error("cannot write output " + in_quotes(destination_) + ": cannot create a file in " +
                in_quotes(directory.string()) + " (" + std::strerror(errno) + ")");
  ::fchmod(fd, default_file_mode());
  ::close(fd);
  temporary_ = name.data();
}

ReplaceOnCommit::~ReplaceOnCommit() {
  if (!committed_ && !temporary_.empty()) std::remove(temporary_.c_str());
}

void ReplaceOnCommit::commit() {
  if (committed_) return;
  checked_output_path(destination_, inputs_);
  if (std::rename(temporary_.c_str(), destination_.c_str()) != 0)
    throw Error("cannot move the finished output into place as " + in_quotes(destination_) + " (" +
                std::strerror(errno) + ")");
  committed_ = true;
}

}  // namespace sinkgrad
