#pragma once
// out[b] = in[b]^T for every n x n matrix of a batch in device memory (launched on `stream`, a
// cudaStream_t, null: the legacy default stream; asynchronous; errors as every launch in
// kernels/cuda).

#include "core/types.hpp"

namespace sinkgrad::cuda {

template <class Real>
void transpose_each_matrix(const Real* in, Real* out, index_t batch, int n, void* stream = nullptr);

}  // namespace sinkgrad::cuda
