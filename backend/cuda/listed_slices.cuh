#pragma once
// How a block of the team kernel finds the matrices of a subset (matrix_subset.hpp): it reads
// the statuses of windows of scan_per_thread * blockDim.x matrices (blockIdx.x, blockIdx.x +
// gridDim.x, ...: interleaved, so that a cluster of selected matrices spreads over the blocks),
// lists the selected ones in shared memory and hands them out as slices of up to `teams`. A
// batch with none selected costs each block its share of the statuses, read once; no kernel of
// its own counts or lists them first.

#include <cuda_runtime.h>

#include "backend/cuda/matrix_subset.hpp"
#include "core/types.hpp"

namespace sinkgrad::cuda::detail {

inline constexpr int scan_per_thread = 4;

// Entries a block's list needs for blocks of `threads` threads and `teams` teams: fewer than
// `teams` are held when a window is read, which adds at most a window.
__host__ __device__ constexpr int listed_capacity(int threads, int teams) {
  return teams + scan_per_thread * threads;
}

class ListedSlices {
 public:
  // Every thread of the block constructs it; list holds listed_capacity entries, held one int
  // (shared memory).
  __device__ ListedSlices(MatrixSubset subset, index_t batch, index_t* list, int* held)
      : subset_(subset), batch_(batch), list_(list), held_(held) {
    position_ = index_t(blockIdx.x) * window();
    if (threadIdx.x == 0) *held_ = 0;
    __syncthreads();
  }

  // Every thread calls it: drops the slice last handed out, then lists list()[0 .. count) as the
  // next (count <= teams), or returns 0 when the block's share is done.
  __device__ int next(int teams) {
    int held = held_count_;
    if (taken_ > 0) {
      const int rest = held - taken_;  // < blockDim.x * scan_per_thread
      index_t moved[scan_per_thread];
      for (int k = 0; k < scan_per_thread; ++k) {
        const int from = taken_ + threadIdx.x + k * int(blockDim.x);
        moved[k] = from < held ? list_[from] : 0;
      }
      __syncthreads();  // every slot read before any is overwritten
      for (int k = 0; k < scan_per_thread; ++k) {
        const int to = threadIdx.x + k * int(blockDim.x);
        if (to < rest) list_[to] = moved[k];
      }
      if (threadIdx.x == 0) *held_ = rest;
      __syncthreads();
      held = rest;
    }
    while (held < teams && position_ < batch_) {
      for (int k = 0; k < scan_per_thread; ++k) {
        const index_t b = position_ + threadIdx.x + index_t(k) * blockDim.x;
        if (b < batch_ && subset_.selects(b)) list_[atomicAdd(held_, 1)] = b;
      }
      position_ += index_t(gridDim.x) * window();
      __syncthreads();  // the window's entries listed
      held = *held_;
      __syncthreads();  // read by every thread before the next window adds to it
    }
    held_count_ = held;
    taken_ = held < teams ? held : teams;
    return taken_;
  }

  __device__ const index_t* list() const { return list_; }

 private:
  __device__ index_t window() const { return index_t(scan_per_thread) * blockDim.x; }

  MatrixSubset subset_;
  index_t batch_;
  index_t* list_;
  int* held_;
  index_t position_ = 0;
  int held_count_ = 0;
  int taken_ = 0;
};

}  // namespace sinkgrad::cuda::detail
