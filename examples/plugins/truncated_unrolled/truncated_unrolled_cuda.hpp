#pragma once
// The CUDA variant of truncated_unrolled (truncated_unrolled_cuda.cu): every pointer of problem
// and result is device memory. Built only when the installed sinkgrad has CUDA.

#include "sinkgrad/sinkgrad.hpp"

namespace truncated_unrolled {

template <class Real>
void solve_on_cuda(const sinkgrad::BackwardProblem<Real>& problem,
                   const sinkgrad::BackwardResult<Real>& result, int k);

}  // namespace truncated_unrolled
