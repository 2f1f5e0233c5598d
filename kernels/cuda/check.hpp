#pragma once
// Checking of CUDA runtime calls and kernel launches: every failure becomes a sinkgrad::Error
// that names the call, the source location and CUDA's own message. Usable from .cu and .cpp
// files of any target that links CUDA::cudart.
//
//   SINKGRAD_CUDA_CHECK(cudaMemcpy(...));        // a runtime call
//   kernel<<<grid, block>>>(...);
//   SINKGRAD_CUDA_CHECK_LAUNCH("unrolled kernel"); // the launch (configuration, resources)
//
// A launch check catches errors of the launch itself; errors while the kernel runs surface at
// the next synchronising call, which must be checked too (cuda::synchronize below does that).

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"

namespace sinkgrad::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* what, const char* file,
                                          int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so that later calls are not blamed
  std::string location = file;
  const auto slash = location.find_last_of('/');
  if (slash != std::string::npos) location = location.substr(slash + 1);
  throw Error(std::string("CUDA error in ") + what + " (" + location + ":" + std::to_string(line) +
              "): " + cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

inline void check(cudaError_t code, const char* what, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(code, what, file, line);
}

}  // namespace sinkgrad::cuda

#define SINKGRAD_CUDA_CHECK(call) ::sinkgrad::cuda::check((call), #call, __FILE__, __LINE__)
#define SINKGRAD_CUDA_CHECK_LAUNCH(what) \
  ::sinkgrad::cuda::check(cudaGetLastError(), "launch of " what, __FILE__, __LINE__)
