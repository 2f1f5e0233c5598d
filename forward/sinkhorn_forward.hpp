#pragma once
// Batched Sinkhorn forward. The math: forward/forward_team.hpp (the team form),
// forward/log_domain.hpp (the log-domain loop), forward/convention_forward.hpp and
// forward/convention_team.hpp (the conventions with eps or the softmax base).

#include "core/batch.hpp"
#include "core/forward_spec.hpp"
#include "core/types.hpp"

namespace sinkgrad {

// R = Sinkhorn_T(exp(logits)) for every matrix; column_violation[b] = max_j |c_j - 1| (NaN for
// a matrix whose logits are not finite; its R is NaN too). Returns the number of such matrices.
// logits, R and column_violation must be host memory; the overload below takes a Device. Every
// overload throws Error when R overlaps logits or column_violation overlaps either.
template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation);

// The same on a chosen device. Device::cpu: everything in host memory. Device::cuda: logits, R
// and column_violation (may be null) all in device memory (used in place), or all in host
// memory (staged through the GPU); the views' MemorySpace says which. Returns when R is
// written; throws Error("no CUDA device: ...") when no GPU is usable.
template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, Device device);

// The forward on CUDA for callers that order work by stream (the PyTorch layer): logits and R
// in device memory, launched on `stream` (a cudaStream_t; null: the legacy default stream);
// returns without waiting, allocates nothing and counts nothing (a matrix with non-finite
// logits still gets a NaN R). Launch errors throw Error at once; errors while the kernel runs
// surface at the caller's next synchronisation. Throws Error in a build without CUDA.
// forward: the convention (core/forward_spec.hpp; the default is the seeds').
template <class Real>
void sinkhorn_forward_async(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                            void* stream, const ForwardSpec& forward = {});

// The same for a chosen forward convention (core/forward_spec.hpp). column_violation then
// holds the violation of the marginal the last step does not normalise: max_j |c_j - 1| for
// columns_first, max_i |r_i - 1| for rows_first and tilekernels. The default spec runs the
// overloads above unchanged; rows_first without eps for n <= 64 runs their team form on the
// transposed matrices (core/forward_spec.hpp); the others run the log-domain form of
// forward/convention_forward.hpp, one thread per matrix on the GPU. Throws Error for a spec
// whose eps is negative or not finite.
template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, Device device, const ForwardSpec& forward);

}  // namespace sinkgrad
