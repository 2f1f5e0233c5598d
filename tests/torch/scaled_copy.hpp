#pragma once
// The test plugin's per-matrix solve (scaled_copy_plugin.cpp), the same on the CPU and the GPU:
// grad = scale * G, status ok, 7 iterations; matrix nan_at's gradient NaN (a broken contract).

#include "sinkgrad/per_matrix.hpp"
#include "sinkgrad/sinkgrad.hpp"

namespace sinkgrad_test {

template <class Real>
struct ScaledCopy {
  sinkgrad::BackwardProblem<Real> problem;
  sinkgrad::BackwardResult<Real> result;
  Real scale;
  sinkgrad::index_t nan_at;
  SINKGRAD_HD sinkgrad::MatrixOutcome operator()(sinkgrad::index_t b, Real*, Real*) const {
    const int nn = problem.grad_output.n * problem.grad_output.n;
    for (int k = 0; k < nn; ++k)
      result.grad_logits.matrix(b)[k] = b == nan_at ? sinkgrad::math::quiet_nan<Real>()
                                                    : scale * problem.grad_output.matrix(b)[k];
    return {sinkgrad::SolveStatus::ok, 7};
  }
};

// Launches it over the batch on the problem's stream (scaled_copy_cuda.cu).
template <class Real>
void scaled_copy_cuda(const ScaledCopy<Real>& solve);

}  // namespace sinkgrad_test
