#pragma once
// A stream of the caller's for the stream-ordered tests: non-blocking, so that it has no
// implicit ordering with the legacy default stream, and a launch, copy or release that ignored
// it would race with the work around it.

#include <cuda_runtime.h>

#include "kernels/cuda/check.hpp"

namespace sinkgrad::testing {

struct SideStream {
  cudaStream_t handle = nullptr;
  SideStream() { SINKGRAD_CUDA_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking)); }
  ~SideStream() { cudaStreamDestroy(handle); }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
};

}  // namespace sinkgrad::testing
