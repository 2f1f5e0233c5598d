#pragma once
// How a block of the team kernel finds the matrices of a subset (matrix_subset.hpp): it reads
// the statuses of windows of scan_per_thread * blockDim.x matrices (windows blockIdx.x,
// blockIdx.x + gridDim.x, ...: interleaved, so that a cluster of selected matrices spreads over
// the blocks), each thread holding which of its scan_per_thread matrices are selected, lists the
// selected ones in shared memory and hands them out as slices of up to `teams`. A window with
// none selected costs its loads and one barrier; one with a few is listed whole; a crowded one
// a row of blockDim.x at a time, as the list empties. No kernel of its own counts or lists the
// matrices first.

#include <cuda_runtime.h>

#include "core/types.hpp"
#include "kernels/cuda/matrix_subset.hpp"

namespace sinkgrad::cuda::detail {

// Statuses each thread reads per window, independent loads in flight at once (at most 32: the
// selection is a bit mask).
inline constexpr int scan_per_thread = 16;

// Rows a block lists at once when a window is listed whole.
inline constexpr int listed_rows = 4;

// Entries a block's list holds: fewer than `teams` are held when a window of few selected (at
// most listed_rows rows' worth) or a row of `threads` is listed.
__host__ __device__ constexpr int listed_capacity(int threads, int teams) {
  return teams + listed_rows * threads;
}

class ListedSlices {
 public:
  // Every thread of the block constructs it; list holds listed_capacity entries, counters two
  // ints (shared memory): the entries held, and the matrices selected in the windows read.
  __device__ ListedSlices(MatrixSubset subset, index_t batch, index_t* list, int* counters)
      : subset_(subset),
        batch_(batch),
        list_(list),
        held_(counters),
        selected_total_(counters + 1) {
    next_window_ = index_t(blockIdx.x) * window();
    if (threadIdx.x == 0) *held_ = *selected_total_ = 0;
    __syncthreads();
  }

  // Every thread calls it: drops the slice last handed out, then puts the next one (count <=
  // teams matrices) first in the list and returns count, or returns 0 when the block's share is
  // done.
  __device__ int next(int teams) {
    int held = held_count_;
    if (taken_ > 0) {
      const int rest = held - taken_;  // <= listed_rows * blockDim.x
      index_t moved[listed_rows];
      for (int k = 0; k < listed_rows; ++k) {
        const int from = taken_ + int(threadIdx.x) + k * int(blockDim.x);
        moved[k] = from < held ? list_[from] : 0;
      }
      __syncthreads();  // every entry read before any is overwritten
      for (int k = 0; k < listed_rows; ++k) {
        const int to = int(threadIdx.x) + k * int(blockDim.x);
        if (to < rest) list_[to] = moved[k];
      }
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
        row_ = scan_per_thread;
        if (!__syncthreads_or(selected_ != 0)) continue;
        // How many the window selected: listed whole where the list has room for them.
        if (selected_ != 0) atomicAdd(selected_total_, __popc(selected_));
        __syncthreads();
        const int total = *selected_total_ - selected_seen_;
        selected_seen_ += total;
        if (held + total <= teams + listed_rows * int(blockDim.x)) {
          for (int k = 0; k < scan_per_thread; ++k)
            if ((selected_ >> k) & 1u)
              list_[atomicAdd(held_, 1)] = window_ + threadIdx.x + index_t(k) * blockDim.x;
          __syncthreads();  // the window's entries listed
          held = *held_;
          __syncthreads();  // read by every thread before the list changes again
          continue;
        }
        row_ = 0;
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

 private:
  __device__ index_t window() const { return index_t(scan_per_thread) * blockDim.x; }

  MatrixSubset subset_;
  index_t batch_;
  index_t* list_;
  int* held_;
  int* selected_total_;
  int selected_seen_ = 0;    // *selected_total_ when this thread last read it
  index_t window_ = 0;       // the window being listed
  index_t next_window_ = 0;  // the next window to read
  unsigned selected_ = 0;    // bit k: this thread's matrix of row k of the window is selected
  int row_ = scan_per_thread;
  int held_count_ = 0;
  int taken_ = 0;
};

}  // namespace sinkgrad::cuda::detail
