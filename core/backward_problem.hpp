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

// Per-matrix diagnostics of a solve (docs/math.md, "Diagnostics of a solve"): B entries each, in
// the memory space of the other outputs; a null pointer is a quantity not wanted (all null, the
// default: nothing is computed and no memory is touched).
//   row_violation[b]     max_i |r_i - 1|, r = R 1, of the R given to the solver
//   column_violation[b]  max_j |c_j - 1|, c = R^T 1 (both NaN when R holds NaN or Inf)
//   relative_residual[b] ||r_k|| / ||b|| at CG's last iterate, as CG measures it (its scaled,
//                        mean-free right-hand side; 0 for b = 0); NaN for a solver that does
//                        not iterate and for a matrix that failed before CG started or broke down
//   zero_entries[b]      entries of R exactly zero (exp underflowed); > 0: saturated
// The violations and zero counts are computed by BackwardSolver for every solver, plugins
// included; relative_residual is NaN-filled there and written by the CG drivers.
template <class Real>
struct SolveDiagnostics {
  Real* row_violation = nullptr;
  Real* column_violation = nullptr;
  Real* relative_residual = nullptr;
  std::int32_t* zero_entries = nullptr;

  bool any() const {
    return row_violation != nullptr || column_violation != nullptr ||
           relative_residual != nullptr || zero_entries != nullptr;
  }
};

// Where an iterative solver hands the gradient of every iterate of a solve (a study scores the
// iterates of one solve instead of re-solving once per iteration count): gradient(b, k, g) with
// g the n x n gradient (row-major) that the solve stopped after k iterations would return,
// k = 1 .. the last iteration performed by matrix b. Called from the solver's threads at once
// for different b. BackwardSolver::reports_iterates says which solvers call it (the CPU CG
// solvers); the others ignore it.
template <class Real>
class IterateSink {
 public:
  virtual ~IterateSink() = default;
  virtual void gradient(index_t b, int k, const Real* g) = 0;
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
  SolveDiagnostics<Real> diagnostics{};  // optional, per matrix (above)
  // Optional: every iterate's gradient (IterateSink; host memory, grad_logits not aliasing the
  // problem's views). Null when not wanted.
  IterateSink<Real>* iterates = nullptr;
};

}  // namespace sinkgrad
