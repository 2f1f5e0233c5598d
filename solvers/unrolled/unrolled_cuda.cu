// CUDA batch driver of `unrolled`: for n <= 1024 the team form of
// solvers/unrolled/unrolled_team.hpp (one team per matrix, the replay's tape in shared memory
// up to n = 64, solvers/unrolled/unrolled_cuda_teams.hpp); above that the log-domain replay of
// solvers/unrolled/unrolled_math.hpp, one thread per matrix with its potentials in shared
// memory and the adjoint W in the gradient buffer itself. rows_first without eps runs the team
// form on the transposed tiles; the forwards with eps and tilekernels the team form of
// solvers/unrolled/convention_unrolled_team.hpp (transposed for rows_first and tilekernels),
// above n = 1024 the log-domain replay of solvers/unrolled/convention_unrolled.hpp, one thread
// per matrix.

#include <string>

#include "kernels/cuda/block_team.cuh"
#include "kernels/cuda/per_matrix_launch.cuh"
#include "solvers/unrolled/convention_unrolled.hpp"
#include "solvers/unrolled/unrolled_cuda.hpp"
#include "solvers/unrolled/unrolled_cuda_teams.hpp"
#include "solvers/unrolled/unrolled_math.hpp"

namespace sinkgrad::cuda {

void unrolled_detail::too_long(int n, int T) {
  throw Error("unrolled on cuda: n = " + std::to_string(n) + ", T = " + std::to_string(T) +
              " needs more on-chip memory for the checkpointed replay than a CUDA block has; "
              "use --device cpu or a smaller T");
}

namespace {

using unrolled_detail::too_long;

template <class Real>
struct UnrolledMatrix {
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  int T;
  int segment;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::unrolled_backward_matrix(problem.logits.matrix(b), problem.grad_output.matrix(b),
                                          result.grad_logits.matrix(b), n, T, segment, work);
  }
};

// Every convention but the default: the log-domain replay, one thread per matrix, all 2n(T + 1)
// potentials kept (no checkpoints).
template <class Real>
struct ConventionUnrolledMatrix {
  math::ConventionForward<Real> convention;
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  int T;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::convention_unrolled_matrix(convention, problem.logits.matrix(b),
                                            problem.grad_output.matrix(b),
                                            result.grad_logits.matrix(b), n, T, work);
  }
};

// Shared memory per matrix of the one-thread form aimed at: 512 matrices resident per
// multiprocessor (228 KB) keep enough threads in flight; a longer T is checkpointed into that,
// and only when even the smallest checkpointed workspace does not fit does a matrix get more
// (fewer per block).
constexpr long long target_bytes_per_matrix = 448;

template <class Real>
void unrolled_per_thread(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         MatrixSubset subset) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  long long capacity = target_bytes_per_matrix / static_cast<long long>(sizeof(Real));
  int segment = math::unrolled_segment_length(n, T, capacity);
  for (int threads = detail::max_threads_per_block; segment == 0 && threads >= 1; threads /= 2) {
    capacity = static_cast<long long>(max_workspace_reals<Real>(threads));
    segment = math::unrolled_segment_length(n, T, capacity);
  }
  if (segment == 0) too_long(n, T);
  const auto workspace = static_cast<std::size_t>(math::unrolled_workspace(n, T, segment));
  launch_per_matrix<Real>(result, problem.grad_output.batch, workspace,
                          UnrolledMatrix<Real>{problem, result, n, T, segment}, stream_of(problem),
                          subset);
}

}  // namespace

template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              MatrixSubset subset) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  if (n <= max_block_team_n) {
    if (is_seeds_forward_up_to_transpose(problem.forward))
      return unrolled_detail::seeds_unrolled_teams(
          problem, result, last_step_normalises_columns(problem.forward.convention), subset);
    return unrolled_detail::convention_unrolled_teams(problem, result, subset);
  }
  if (!is_default_forward(problem.forward)) {
    const auto workspace = math::convention_unrolled_workspace(n, T);
    if (workspace > static_cast<long long>(max_workspace_reals<Real>(1))) too_long(n, T);
    return launch_per_matrix<Real>(
        result, problem.grad_output.batch, static_cast<std::size_t>(workspace),
        ConventionUnrolledMatrix<Real>{math::convention_forward<Real>(problem.forward), problem,
                                       result, n, T},
        stream_of(problem), subset);
  }
  unrolled_per_thread(problem, result, subset);
}

template void unrolled(const BackwardProblem<float>&, const BackwardResult<float>&, MatrixSubset);
template void unrolled(const BackwardProblem<double>&, const BackwardResult<double>&, MatrixSubset);

}  // namespace sinkgrad::cuda
