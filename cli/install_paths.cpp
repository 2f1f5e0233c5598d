#include "cli/install_paths.hpp"

#include <filesystem>
#include <system_error>

namespace sinkgrad::cli {

std::string installed_share_directory() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  const std::filesystem::path share = exe.parent_path().parent_path() / "share" / "sinkgrad";
  return std::filesystem::is_directory(share / "studies", error) ? share.string() : "";
}

std::string studies_directory() {
  const std::string share = installed_share_directory();
  return share.empty() ? std::string(SINKGRAD_SOURCE_DIR) + "/experiments" : share + "/studies";
}

std::string plot_script() {
  const std::string share = installed_share_directory();
  return share.empty() ? std::string(SINKGRAD_SOURCE_DIR) + "/experiments/plot.py"
                       : share + "/plot.py";
}

}  // namespace sinkgrad::cli
