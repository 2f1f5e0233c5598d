#pragma once
// The plain system assumes r = c = 1; its Schur form eliminates α = s_r - R β, which is right
// when R 1 = 1 (the rows are exact: the last step normalised rows). After a forward whose last
// step normalised columns (rows_first, tilekernels) the columns are exact instead, and the
// plain system is solved for the transposed problem: R^T has exact rows, the gradient of M^T
// is (dL/dM)^T, and R^T ⊙ (G^T - α 1^T - 1 β^T) transposed is R ⊙ (G - 1 α^T - β 1^T), the same
// implicit form with the sides swapped (docs/math.md, "Forward conventions").

#include "core/backward_problem.hpp"
#include "kernels/cpu/team_loop.hpp"
#include "kernels/team.hpp"
#include "solvers/common/cg_monitor.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "kernels/cuda/device_memory.hpp"
#include "kernels/cuda/transpose.hpp"
#endif

namespace sinkgrad {

// out[b] = in[b]^T for every matrix of a host batch.
template <class Real>
void transpose_each_matrix(const Real* in, Real* out, index_t batch, int n) {
#pragma omp parallel for schedule(static)
  for (index_t b = 0; b < batch; ++b) {
    const Real* x = in + b * n * n;
    Real* y = out + b * n * n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) y[j * n + i] = x[i * n + j];
  }
}

// solve(problem, result) with rows exact: as given, or on host copies of R^T and G^T with the
// gradient transposed back when the forward left its columns exact.
template <class Real, class Solve>
void solve_on_exact_rows_cpu(const BackwardProblem<Real>& problem,
                             const BackwardResult<Real>& result, Solve&& solve) {
  if (!last_step_normalises_columns(problem.forward.convention)) return solve(problem, result);
  const index_t batch = problem.grad_output.batch;
  const int n = problem.grad_output.n;
  HostBatch<Real> R(batch, n), G(batch, n), grad(batch, n);
  transpose_each_matrix(problem.forward_output.data, R.data(), batch, n);
  transpose_each_matrix(problem.grad_output.data, G.data(), batch, n);
  BackwardProblem<Real> transposed = problem;
  transposed.forward_output = R.view();
  transposed.grad_output = G.view();
  transposed.logits = {};
  BackwardResult<Real> transposed_result = result;
  transposed_result.grad_logits = grad.view();
  solve(transposed, transposed_result);
  transpose_each_matrix(grad.data(), result.grad_logits.data, batch, n);
}

// A CG record (solvers/common/cg_monitor.hpp) of matrix b: its residual history, and the
// gradient of every iterate, which the solver forms in the matrix's gradient, handed to
// result.iterates.
template <class Real>
struct IterateRecord : math::ResidualHistory<Real> {
  static constexpr bool wants_iterates = true;
  IterateSink<Real>* sink;
  index_t b;
  const Real* gradient;
  template <class Team>
  void gradient_formed(const Team&, int k) const {
    sink->gradient(b, k, gradient);
  }
};

// The team-form solvers' CPU driver on the exact side: per_matrix(team, mats, record) for every
// matrix, mats reading R and G as stored, or transposed in place (no copy) when the forward's
// last step normalised columns; record its residual history row (Real*, null when not
// recording), or an IterateRecord where result.iterates asks for every iterate.
template <class Real, class PerMatrix>
void solve_each_matrix_on_exact_rows(const BackwardProblem<Real>& problem,
                                     const BackwardResult<Real>& result, PerMatrix per_matrix) {
  const int n = problem.grad_output.n;
  const auto solve_with = [&](auto matrices) {
    using Matrices = decltype(matrices);
    solve_each_matrix_with_team(
        result, problem.grad_output.batch, n, [&](const auto& team, index_t b, Real* history) {
          const Matrices mats{problem.forward_output.matrix(b), problem.grad_output.matrix(b),
                              result.grad_logits.matrix(b), n};
          if (result.iterates != nullptr)
            return per_matrix(team, mats,
                              IterateRecord<Real>{{history}, result.iterates, b, mats.grad});
          return per_matrix(team, mats, history);
        });
  };
  if (last_step_normalises_columns(problem.forward.convention))
    solve_with(math::CpuMatrices<Real, true>{});
  else
    solve_with(math::CpuMatrices<Real>{});
}

#if defined(SINKGRAD_WITH_CUDA)
// The same with every batch in device memory, for the solvers whose kernels cannot read R and G
// transposed themselves (the team kernels can: kernels/cuda/launch.cuh, TileOrientation):
// the copies live in scratch allocated and freed in the order of the problem's stream, and
// the transposes run on it, so that nothing waits (solve_async's promise).
template <class Real, class Solve>
void solve_on_exact_rows_cuda(const BackwardProblem<Real>& problem,
                              const BackwardResult<Real>& result, Solve&& solve) {
  if (!last_step_normalises_columns(problem.forward.convention)) return solve(problem, result);
  const index_t batch = problem.grad_output.batch;
  const int n = problem.grad_output.n;
  const auto bytes = static_cast<std::size_t>(problem.grad_output.size()) * sizeof(Real);
  cuda::StreamBuffer R(bytes, problem.stream), G(bytes, problem.stream),
      grad(bytes, problem.stream);
  cuda::transpose_each_matrix(problem.forward_output.data, R.as<Real>(), batch, n, problem.stream);
  cuda::transpose_each_matrix(problem.grad_output.data, G.as<Real>(), batch, n, problem.stream);
  BackwardProblem<Real> transposed = problem;
  transposed.forward_output = {R.as<const Real>(), batch, n, MemorySpace::device};
  transposed.grad_output = {G.as<const Real>(), batch, n, MemorySpace::device};
  transposed.logits = {};
  BackwardResult<Real> transposed_result = result;
  transposed_result.grad_logits = {grad.as<Real>(), batch, n, MemorySpace::device};
  solve(transposed, transposed_result);
  cuda::transpose_each_matrix(grad.as<const Real>(), result.grad_logits.data, batch, n,
                              problem.stream);
}  // the buffers are freed after the last transpose, in stream order
#endif

}  // namespace sinkgrad
