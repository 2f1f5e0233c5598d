#pragma once
// Host-callable CUDA drivers of the forward and the built-in solvers, in float and double, for
// every n from 1 to 64 and any batch size (64-bit indices). Every pointer and view is CUDA
// device memory. Each call launches on the legacy default stream and returns without waiting:
// launch errors throw sinkgrad::Error at once, errors while the kernel runs surface at the
// next checked synchronising call (cuda::synchronize; BackwardSolver::solve and the
// device-aware sinkhorn_forward synchronise and check before they return). The per-matrix
// mathematics is the host/device headers that the CPU variants run: the CG solvers, the
// forward, unrolled and the corrected direct solve (n <= 64) in team form, one team of warp
// lanes per matrix (kernels/cuda_team.cuh); the rest one GPU thread per matrix with its
// workspace in shared memory (kernels/per_matrix_launch.cuh). Compiled only when the build has
// CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "solvers/cg/cg_math.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"
#include "solvers/common/implicit_math.hpp"

namespace sinkgrad::cuda {

// R = Sinkhorn_T(exp(logits)); column_violation (B entries, may be null) as the CPU forward.
// invalid_count (one device counter, may be null) is incremented once per matrix whose logits
// are not all finite; the caller zeroes it.
template <class Real>
void sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                      Real* column_violation, unsigned long long* invalid_count = nullptr);

// n <= 64: one team of lanes per matrix (solvers/unrolled/unrolled_team.hpp), the replay's
// tape in shared memory, checkpointed when T > 23; above, one thread per matrix
// (unrolled_math.hpp). Throws Error when T is so large that even the smallest checkpointed tape
// exceeds a block's shared memory.
template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result);

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings);

template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings);

// Dense factorisations of solvers/direct/dense_factorisation.hpp in place of Eigen: the
// corrected system for n <= 64 in team form (solvers/direct/direct_team.hpp), the plain system
// and larger n one thread per matrix (direct_math.hpp).
template <class Real>
void direct(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
            math::SchurSystem system);

}  // namespace sinkgrad::cuda
