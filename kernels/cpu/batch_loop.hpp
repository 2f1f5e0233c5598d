#pragma once
// The CPU batch driver: runs a per-matrix solve over the batch in parallel (OpenMP), with one
// workspace per thread, and stores each matrix's status and iteration count (and CG's final
// relative residual, when SolveDiagnostics asks for it).

#include <cstddef>
#include <optional>
#include <vector>

#include "core/backward_problem.hpp"
#include "kernels/cpu/parallel_failure.hpp"

namespace sinkgrad {

// Matrix b's row of the convergence record, null unless recording.
template <class Real>
Real* history_of(const BackwardResult<Real>& result, index_t b) {
  return result.residual_history != nullptr ? result.residual_history + b * result.history_stride
                                            : nullptr;
}

template <class Real>
void record(const BackwardResult<Real>& result, index_t b, MatrixOutcome outcome) {
  result.status[b] = outcome.status;
  result.iterations[b] = outcome.iterations;
  if (result.diagnostics.relative_residual != nullptr)
    result.diagnostics.relative_residual[b] = Real(outcome.residual);
}

// per_matrix(b, workspace, history) -> MatrixOutcome over one workspace object per thread,
// made by make_workspace() (a vector of Reals, an Eigen factorisation's objects); history is
// null unless recording. What making the workspace or a matrix throws is rethrown after the
// parallel region (parallel_failure.hpp).
template <class Real, class MakeWorkspace, class PerMatrix>
void solve_each_matrix_on_cpu_with(const BackwardResult<Real>& result, index_t batch,
                                   MakeWorkspace make_workspace, PerMatrix per_matrix) {
  ParallelFailure failure;
#pragma omp parallel
  {
    std::optional<decltype(make_workspace())> workspace;
    failure.run([&] { workspace.emplace(make_workspace()); });
#pragma omp for schedule(static)
    for (index_t b = 0; b < batch; ++b)
      failure.run([&] { record(result, b, per_matrix(b, *workspace, history_of(result, b))); });
  }
  failure.rethrow();
}

// per_matrix(b, work, history) -> MatrixOutcome with `workspace` Reals of work per thread.
template <class Real, class PerMatrix>
void solve_each_matrix_on_cpu(const BackwardResult<Real>& result, index_t batch,
                              std::size_t workspace, PerMatrix per_matrix) {
  solve_each_matrix_on_cpu_with(
      result, batch, [&] { return std::vector<Real>(workspace); },
      [&](index_t b, std::vector<Real>& work, Real* history) {
        return per_matrix(b, work.data(), history);
      });
}

}  // namespace sinkgrad
