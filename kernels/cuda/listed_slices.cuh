#pragma once
// How a block of the team kernel finds the matrices of a subset (matrix_subset.hpp): it reads
// the statuses of windows of scan_per_thread * blockDim.x matrices (windows blockIdx.x,
// blockIdx.x + gridDim.x, ...: interleaved, so that a cluster of selected matrices spreads over
// the blocks), each thread holding which of its scan_per_thread matrices are selected, lists
// the selected ones in shared memory a row of blockDim.x at a time and hands them out as slices
// of up to `teams`. A window with none selected costs its loads and one barrier; no kernel of
// its own counts or lists the matrices first.

#include <cuda_runtime.h>

#include "core/types.hpp"
#include "kernels/cuda/matrix_subset.hpp"

namespace sinkgrad::cuda::detail {

// Statuses each thread reads per window, independent loads in flight at once (at most 32: the
// selection is a bit mask).
inline constexpr int scan_per_thread = 16;

// Entries a block's list needs: fewer than `teams` are held when a row of `threads` is listed.
__host__ __device__ constexpr int listed_capacity(int threads, int teams) {
  return teams + threads;
}

class ListedSlices {
 public:
  // Every thread of the block constructs it; list holds listed_capacity entries, held one int
  // (shared memory).
  __device__ ListedSlices(MatrixSubset subset, index_t batch, index_t* list, int* held)
      : subset_(subset), batch_(batch), list_(list), held_(held) {
    next_window_ = index_t(blockIdx.x) * window();
    if (threadIdx.x == 0) *held_ = 0;
    __syncthreads();
  }

  // Every thread calls it: drops the slice last handed out, then lists list()[0 .. count) as the
  // next (count <= teams), or returns 0 when the block's share is done.
  __device__ int next(int teams) {
    int held = held_count_;
    if (taken_ > 0) {
      const int rest = held - taken_;  // < blockDim.x: one entry a thread moves
      const index_t moved = int(threadIdx.x) < rest ? list_[taken_ + threadIdx.x] : 0;
      __syncthreads();  // every entry read before any is overwritten
      if (int(threadIdx.x) < rest) list_[threadIdx.x] = moved;
      if (threadIdx.x == 0) *held_ = rest;
      __syncthreads();
      held = rest;
    }
    while (held < teams) {
      if (row_ == scan_per_thread) {  // the window is listed: read the next one
        if (next_window_ >= batch_) break;
        selected_ = 0;
        for (int k = 0; k < scan_per_thread; ++k) {
          const index_t b = next_window_ + threadIdx.x + index_t(k) * blockDim.x;
          if (b < batch_ && subset_.selects(b)) selected_ |= 1u << k;
        }
        window_ = next_window_;
        next_window_ += index_t(gridDim.x) * window();
        row_ = __syncthreads_or(selected_ != 0) ? 0 : scan_per_thread;
        continue;
      }
      if ((selected_ >> row_) & 1u)
        list_[atomicAdd(held_, 1)] = window_ + threadIdx.x + index_t(row_) * blockDim.x;
      ++row_;
      __syncthreads();  // the row's entries listed
      held = *held_;
      __syncthreads();  // read by every thread before the next row adds to it
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
  index_t window_ = 0;       // the window being listed
  index_t next_window_ = 0;  // the next window to read
  unsigned selected_ = 0;    // bit k: this thread's matrix of row k of the window is selected
  int row_ = scan_per_thread;
  int held_count_ = 0;
  int taken_ = 0;
};

}  // namespace sinkgrad::cuda::detail
