#pragma once
// The CUDA stream a solve launches on: BackwardProblem carries it as void* so that core/ and
// the host-only drivers need no CUDA header.

#include <cuda_runtime.h>

#include "core/backward_problem.hpp"

namespace sinkgrad::cuda {

template <class Real>
cudaStream_t stream_of(const BackwardProblem<Real>& problem) {
  return static_cast<cudaStream_t>(problem.stream);
}

}  // namespace sinkgrad::cuda
