#pragma once
// Whether a team kernel stages its next slice's inputs while it computes (kernels/cuda/launch.cuh).
// Staging keeps the memory system busy during the arithmetic but takes shared memory for a
// second copy of the inputs, so fewer blocks fit at once: which wins depends on the kernel and
// n, and each driver passes the faster choice for its kernels (measured: docs/performance.md).

namespace sinkgrad::cuda {

enum class Staging { off, on };

namespace detail {

// SINKGRAD_CUDA_STAGING=on|off overrides every driver's choice (to measure both on another
// GPU); an other value throws Error at the first launch.
inline constexpr const char* staging_variable = "SINKGRAD_CUDA_STAGING";

Staging staging_or_override(Staging chosen);

}  // namespace detail
}  // namespace sinkgrad::cuda
