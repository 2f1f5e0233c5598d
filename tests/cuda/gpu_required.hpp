#pragma once
// SINKGRAD_REQUIRE_GPU(): skips a test, with the reason, on a machine without a CUDA device.

#include <gtest/gtest.h>

#if defined(SINKGRAD_WITH_CUDA)
#include "kernels/cuda/device_memory.hpp"
#endif

namespace sinkgrad::testing {

inline bool cuda_available() {
#if defined(SINKGRAD_WITH_CUDA)
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

#define SINKGRAD_REQUIRE_GPU()                                                          \
  do {                                                                                  \
    if (!::sinkgrad::testing::cuda_available())                                         \
      GTEST_SKIP() << "no CUDA device on this machine: CUDA-vs-CPU parity not checked"; \
  } while (0)

}  // namespace sinkgrad::testing
