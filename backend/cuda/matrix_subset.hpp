#pragma once
// A subset of a batch listed in device memory: a launch given one runs only the matrices
// index[0 .. *count) (each at its own place in the batch's views), and reads the count on the
// device, so that a pass over the few matrices that need it (the exact fallback of failed
// implicit solves) neither waits for the GPU to count them nor touches the others. A launch
// given none runs every matrix.

#include "core/host_device.hpp"
#include "core/types.hpp"

namespace sinkgrad::cuda {

struct MatrixSubset {
  const index_t* index = nullptr;  // device memory; null: the whole batch
  const index_t* count = nullptr;  // device memory, one entry

  SINKGRAD_HD bool whole() const { return index == nullptr; }
};

}  // namespace sinkgrad::cuda
