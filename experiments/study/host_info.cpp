#include "experiments/study/host_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <utility>

#include <omp.h>

#include "experiments/study/definition.hpp"
#include "forward/sinkhorn_forward.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace sinkgrad::study {
namespace {

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown cpu";
}

std::string gpu_name() {
#if defined(SINKGRAD_WITH_CUDA)
  cudaDeviceProp properties{};
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaGetDeviceProperties(&properties, device) == cudaSuccess)
    return properties.name;
#endif
  return "unknown gpu";
}

bool gpu_usable(std::string* reason) {
  static const std::pair<bool, std::string> probe = [] {
    try {
      HostBatch<double> M(1, 1), R(1, 1);
      sinkhorn_forward<double>(M.view(), 1, R.view(), nullptr, Device::cuda);
      return std::make_pair(true, std::string());
    } catch (const Error& error) {
      return std::make_pair(false, std::string(error.what()));
    }
  }();
  if (reason != nullptr) *reason = probe.second;
  return probe.first;
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string devices_text(const std::vector<Device>& devices) {
  std::string text;
  for (const Device device : devices) {
    text += text.empty() ? "" : "; ";
    if (device == Device::cpu)
      text += "cpu: " + cpu_name() + " (" + std::to_string(omp_get_max_threads()) + " threads)";
    else
      text += "cuda: " + gpu_name();
  }
  return text;
}

std::vector<Device> resolve_devices(const std::vector<std::string>& names) {
  std::vector<Device> devices;
  for (const std::string& name : names) {
    Device device = Device::cpu;
    if (name == "default") {
      device = gpu_usable(nullptr) ? Device::cuda : Device::cpu;
    } else if (name == "cpu" || name == "cuda") {
      device = parse_device(name);
      std::string reason;
      if (device == Device::cuda && !gpu_usable(&reason))
        throw DefinitionError("device 'cuda' was asked for, but no GPU is usable: " + reason +
                              " (use cpu, or default: cuda when a GPU is usable, else cpu)");
    } else {
      throw DefinitionError("unknown device '" + name + "'; allowed: cpu, cuda, default");
    }
    if (std::find(devices.begin(), devices.end(), device) == devices.end())
      devices.push_back(device);
  }
  return devices;
}

}  // namespace sinkgrad::study
