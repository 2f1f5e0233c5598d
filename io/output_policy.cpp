#include "io/output_policy.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace sinkgrad {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string checked_output_path(const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty()) throw Error("the output file name is empty");
  const std::string prefix = "cannot write output '" + output + "': ";
  std::string target = output;
  struct stat link_info {};
  if (::lstat(output.c_str(), &link_info) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return output;  // a new file; its directory is
                      // checked when it is created
    throw Error(prefix + std::strerror(errno));
  }
  if (S_ISLNK(link_info.st_mode)) {
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::canonical(output, ec);
    if (ec)
      throw Error(prefix + "it is a symbolic link to a missing file (" + ec.message() +
                  "); give the path of the file to write");
    target = resolved.string();
  }
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0) throw Error(prefix + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    throw Error(prefix + "it is " + kind_of(info.st_mode) +
                "; sinkgrad writes only regular files (give a file name)");
  for (const std::string& input : inputs) {
    struct stat input_info {};
    if (input.empty() || ::stat(input.c_str(), &input_info) != 0) continue;
    if (input_info.st_dev == info.st_dev && input_info.st_ino == info.st_ino)
      throw Error(prefix + "it is the same file as the input '" + input +
                  "' (writing it would destroy the input); give another output");
  }
  return target;
}

}  // namespace sinkgrad
