#pragma once
// The CUDA batch driver of the Sinkhorn forward, for float and double, every n >= 1 and any
// batch size (64-bit indices): the team form (forward/forward_team.hpp) for n <= 1024, the
// log-domain loop (forward/log_domain.hpp) one thread per matrix above.
// Every pointer and view is CUDA device memory. The call launches on `stream` (a cudaStream_t;
// null: the legacy default stream) and returns without waiting: launch errors throw sinkgrad::Error
// at once, errors while the kernel runs surface at the next checked synchronising call
// (cuda::synchronize). Compiled only when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/batch.hpp"
#include "core/forward_spec.hpp"

namespace sinkgrad::cuda {

// R = Sinkhorn_T(exp(logits)); column_violation (B entries, may be null) as the CPU forward.
// invalid_count (one device counter, may be null) is incremented once per matrix whose logits
// are not all finite; the caller zeroes it.
template <class Real>
void sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                      Real* column_violation, unsigned long long* invalid_count = nullptr,
                      void* stream = nullptr);

// The same for any convention, n <= 1024 in team form: rows_first without eps as the default's
// on the transposed matrices (core/forward_spec.hpp, is_transposed_default_forward), the others
// in that of forward/convention_team.hpp; above, the log-domain form of
// forward/convention_forward.hpp, one thread per matrix; column_violation as the CPU's
// sinkhorn_forward with a ForwardSpec.
template <class Real>
void convention_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                        Real* column_violation, unsigned long long* invalid_count,
                        const ForwardSpec& forward, void* stream = nullptr);

}  // namespace sinkgrad::cuda
