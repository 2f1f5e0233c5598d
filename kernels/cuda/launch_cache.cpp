#include "kernels/cuda/launch_cache.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "kernels/cuda/check.hpp"

namespace sinkgrad::cuda::detail {
namespace {

// Everything kept, behind one lock: a lookup costs far less than the query it replaces, and the
// first query of each key runs under the lock (once per process, never again).
struct Cache {
  std::mutex mutex;
  std::map<int, DeviceLimits> limits;
  std::map<std::tuple<int, const void*, int, std::size_t>, int> occupancy;
  std::map<std::pair<int, const void*>, std::size_t> dynamic_shared;
};

Cache& cache() {
  static auto* kept = new Cache;  // never destroyed: a launch may run during exit
  return *kept;
}

}  // namespace

int current_device() {
  int device = 0;
  SINKGRAD_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

DeviceLimits device_limits() {
  const int device = current_device();
  Cache& kept = cache();
  const std::lock_guard lock(kept.mutex);
  const auto it = kept.limits.find(device);
  if (it != kept.limits.end()) return it->second;
  int bytes = 0;
  SINKGRAD_CUDA_CHECK(
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  int count = 0;
  SINKGRAD_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  const DeviceLimits limits{static_cast<std::size_t>(bytes), count};
  kept.limits.emplace(device, limits);
  return limits;
}

int blocks_per_multiprocessor(const void* kernel, int threads, std::size_t shared_bytes) {
  const int device = current_device();
  Cache& kept = cache();
  const std::lock_guard lock(kept.mutex);
  const auto key = std::make_tuple(device, kernel, threads, shared_bytes);
  const auto it = kept.occupancy.find(key);
  if (it != kept.occupancy.end()) return it->second;
  int per_multiprocessor = 0;
  SINKGRAD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel,
                                                                    threads, shared_bytes));
  kept.occupancy.emplace(key, per_multiprocessor);
  return per_multiprocessor;
}

void allow_dynamic_shared(const void* kernel, std::size_t bytes) {
  const int device = current_device();
  Cache& kept = cache();
  const std::lock_guard lock(kept.mutex);
  std::size_t& allowed = kept.dynamic_shared[{device, kernel}];
  if (bytes <= allowed) return;
  SINKGRAD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
  allowed = bytes;
}

}  // namespace sinkgrad::cuda::detail
