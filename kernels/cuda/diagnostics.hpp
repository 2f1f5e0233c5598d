#pragma once
// The solver-independent diagnostics of a solve (core/solve_diagnostics.hpp) for a batch in
// device memory: one thread per matrix, launched on `stream` (a cudaStream_t, null: the legacy
// default stream), asynchronous, errors as every launch in kernels/cuda.

#include "core/backward_problem.hpp"

namespace sinkgrad::cuda {

template <class Real>
void store_diagnostics(BatchView<const Real> R, const SolveDiagnostics<Real>& diagnostics,
                       void* stream);

}  // namespace sinkgrad::cuda
