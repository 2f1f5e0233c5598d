#pragma once
// Moving a block's slice of matrices: asynchronous 16-byte copies (cp.async) of the next
// slice's inputs into a shared staging area while the block computes on this one, so that the
// memory system is kept busy during the arithmetic; and the moves between contiguous storage
// (staging or global memory) and the padded tiles, with coalesced 16-byte accesses.

#include <cuda_pipeline.h>

#include <cstdint>

#include "core/types.hpp"
#include "kernels/cuda/vec16.cuh"

namespace sinkgrad::cuda::detail {

// Starts copying count * n^2 Reals of a contiguous batch slice from global memory into
// staging (16-byte aligned) without waiting for them (cp.async: the copy lands while the
// block computes on the previous slice); 16-byte copies when the slice is aligned.
template <class Real>
__device__ void stage_async(Real* staging, const Real* global, int total) {
  constexpr int vec = 16 / sizeof(Real);
  int done = 0;
  if (reinterpret_cast<std::uintptr_t>(global) % 16 == 0) {
    done = total / vec * vec;
    for (int e = threadIdx.x * vec; e < done; e += blockDim.x * vec)
      __pipeline_memcpy_async(staging + e, global + e, 16);
  }
  for (int e = done + threadIdx.x; e < total; e += blockDim.x)
    __pipeline_memcpy_async(staging + e, global + e, sizeof(Real));
  __pipeline_commit();
}

// Moves count matrices between contiguous n x n storage (shared staging, or global memory) and
// padded tiles (tile m starts at tiles + m * tile_reals), with 16-byte accesses to the
// contiguous side when n allows. to_tiles: contiguous -> tiles, else tiles -> contiguous
// (streaming stores: the output is not read again). transposed: entry (i, j) of the contiguous
// side is entry (j, i) of its tile, so that a kernel works on the transposed matrices and
// stores its output transposed back, with no copy in global memory.
template <class Real, bool to_tiles, int fixed_n, bool transposed = false>
__device__ void copy_tiles(Real* tiles, int tile_reals, int stride, Real* contiguous, int count,
                           int n) {
  if constexpr (fixed_n > 0) n = fixed_n;
  constexpr int vec = reals_per_vec16<Real>;
  // Unsigned index arithmetic: a signed division by a constant costs twice the instructions.
  const unsigned un = n, nn = un * un, total = unsigned(count) * nn;
  // The tile distance between consecutive entries of a contiguous row.
  const unsigned along = transposed ? unsigned(stride) : 1u;
  const auto tile_entry = [&](unsigned e) {  // entry e of the contiguous side, in its tile
    const unsigned m = e / nn, r = e - m * nn, row = r / un, col = r - row * un;
    return tiles + m * tile_reals + (transposed ? col * stride + row : row * stride + col);
  };
  const bool vectorised = n % vec == 0 && reinterpret_cast<std::uintptr_t>(contiguous) % 16 == 0;
  if (vectorised) {
    for (unsigned e = threadIdx.x * vec; e < total; e += blockDim.x * vec) {
      Real* t = tile_entry(e);
      auto* c = reinterpret_cast<Vec16<Real>*>(contiguous + e);
      Real part[vec];
      if constexpr (to_tiles) {
        const Vec16<Real> v = *c;
        static_assert(sizeof(Vec16<Real>) == sizeof(part));
        memcpy(part, &v, sizeof(v));
#pragma unroll
        for (int q = 0; q < vec; ++q) t[q * along] = part[q];
      } else {
#pragma unroll
        for (int q = 0; q < vec; ++q) part[q] = t[q * along];
        Vec16<Real> v;
        memcpy(&v, part, sizeof(v));
        __stcs(c, v);
      }
    }
  } else {
    for (unsigned e = threadIdx.x; e < total; e += blockDim.x) {
      Real* t = tile_entry(e);
      if constexpr (to_tiles)
        *t = contiguous[e];
      else
        __stcs(contiguous + e, *t);
    }
  }
}

// copy_tiles for matrices at listed places: matrix m of the tiles is matrix list[m] of the batch
// at `batch` (a MatrixSubset's slice). One entry per access: the subsets it serves are small.
template <class Real, bool to_tiles, int fixed_n, bool transposed = false>
__device__ void copy_listed_tiles(Real* tiles, int tile_reals, int stride, Real* batch,
                                  const index_t* list, int count, int n) {
  if constexpr (fixed_n > 0) n = fixed_n;
  const unsigned un = n, nn = un * un, total = unsigned(count) * nn;
  for (unsigned e = threadIdx.x; e < total; e += blockDim.x) {
    const unsigned m = e / nn, r = e - m * nn, row = r / un, col = r - row * un;
    Real* t = tiles + m * tile_reals + (transposed ? col * stride + row : row * stride + col);
    Real* g = batch + list[m] * index_t(nn) + r;
    if constexpr (to_tiles)
      *t = *g;
    else
      __stcs(g, *t);
  }
}

}  // namespace sinkgrad::cuda::detail
