#pragma once
// What the launchers ask the CUDA runtime about a device and a kernel, asked once per device
// (and kernel and launch shape) and kept: the answers never change while the process runs, and
// asking costs host time on every launch, which a layer called for every training step pays.
// Thread-safe; nothing here allocates device memory or touches a stream, so a launch may be
// captured into a CUDA graph. Every failed query throws Error (check.hpp) and is not kept.

#include <cstddef>

namespace sinkgrad::cuda::detail {

// The current device (cudaGetDevice).
int current_device();

struct DeviceLimits {
  std::size_t shared_optin = 0;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int multiprocessors = 0;       // cudaDevAttrMultiProcessorCount
};

// The limits of the current device.
DeviceLimits device_limits();

// cudaOccupancyMaxActiveBlocksPerMultiprocessor of `kernel` (a __global__ function's address)
// on the current device.
int blocks_per_multiprocessor(const void* kernel, int threads, std::size_t shared_bytes);

// Opts `kernel` into `bytes` of dynamic shared memory on the current device
// (cudaFuncAttributeMaxDynamicSharedMemorySize); the limit is only ever raised, so that a
// launch of another size on another thread never finds it lowered under it.
void allow_dynamic_shared(const void* kernel, std::size_t bytes);

}  // namespace sinkgrad::cuda::detail
