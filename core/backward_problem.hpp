#pragma once
// What a backward solve takes and what it writes. All views of one solve share B, n and a
// memory space (host memory, or CUDA device memory for a solve on Device::cuda).

#include <cstdint>

#include "core/batch.hpp"
#include "core/forward_spec.hpp"
#include "core/status.hpp"

namespace sinkgrad {

template <class Real>
struct BackwardProblem {
  BatchView<const Real> logits;          // M, needed by solvers that replay the forward
  BatchView<const Real> forward_output;  // R = Sinkhorn_T(exp(M))
  BatchView<const Real> grad_output;     // G = dL/dR
  int forward_iterations = 0;            // T >= 1
  // The convention that produced R (default: the seeds', columns then rows, no eps). unrolled
  // differentiates it; cg_plain and direct system=plain take the side it leaves exact.
  ForwardSpec forward{};
  // The CUDA stream (a cudaStream_t) that a solve of device-memory batches launches on; null
  // is the legacy default stream. Ignored on the cpu and when batches are staged from the host.
  void* stream = nullptr;
};

template <class Real>
struct BackwardResult {
  BatchView<Real> grad_logits;         // dL/dM (NaN for a matrix whose status is a failure)
  SolveStatus* status = nullptr;       // B entries
  std::int32_t* iterations = nullptr;  // B entries
  // Optional convergence record: B rows of history_stride Reals, row b holding ||r_k|| for
  // k = 0, 1, ... of matrix b (NaN after its last iteration). Null when not wanted.
  Real* residual_history = nullptr;
  int history_stride = 0;
};

}  // namespace sinkgrad
