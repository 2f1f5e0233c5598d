#pragma once
// Host-callable CUDA drivers of the forward and the built-in solvers. Every pointer is CUDA
// device memory; each call launches on the default stream, checks every CUDA call and launch,
// and throws sinkgrad::Error with the CUDA message on failure. Compiled only when the build
// has CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "solvers/cg/cg_math.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"

namespace sinkgrad::cuda {

template <class Real>
void sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                      Real* column_violation);

template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result);

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings);

template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings);

template <class Real>
void direct(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
            math::SchurSystem system);

}  // namespace sinkgrad::cuda
