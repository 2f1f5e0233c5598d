// CUDA batch driver of `unrolled`, in the form unrolled_plan chooses (unrolled_form.hpp): for
// n <= 1024 the team launches of unrolled_cuda_teams.hpp; above, the log-domain replay of
// convention_unrolled.hpp, one thread per matrix with its potentials in shared memory
// (checkpointed when T is long) and the adjoint W in the gradient buffer itself.

#include <string>

#include "kernels/cuda/block_team.cuh"
#include "kernels/cuda/per_matrix_launch.cuh"
#include "solvers/unrolled/convention_unrolled.hpp"
#include "solvers/unrolled/unrolled_cuda.hpp"
#include "solvers/unrolled/unrolled_cuda_teams.hpp"
#include "solvers/unrolled/unrolled_form.hpp"

namespace sinkgrad::cuda {

void unrolled_detail::too_long(int n, int T) {
  throw Error("unrolled on cuda: n = " + std::to_string(n) + ", T = " + std::to_string(T) +
              " needs more on-chip memory for the checkpointed replay than a CUDA block has; "
              "use --device cpu or a smaller T");
}

namespace {

using unrolled_detail::too_long;

template <class Real>
struct ConventionUnrolledMatrix {
  math::ConventionForward<Real> convention;
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  int T;
  int segment;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::convention_unrolled_matrix(convention, problem.logits.matrix(b),
                                            problem.grad_output.matrix(b),
                                            result.grad_logits.matrix(b), n, T, segment, work);
  }
};

template <class Real>
void unrolled_per_thread(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         MatrixSubset subset) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  // The most matrices a block whose shared memory holds a checkpointed workspace each.
  int segment = 0;
  for (int threads = detail::max_threads_per_block; segment == 0 && threads >= 1; threads /= 2)
    segment = math::convention_unrolled_segment(
        n, T, static_cast<long long>(max_workspace_reals<Real>(threads)));
  if (segment == 0) too_long(n, T);
  const auto workspace =
      static_cast<std::size_t>(math::convention_unrolled_workspace(n, T, segment));
  launch_per_matrix<Real>(
      result, problem.grad_output.batch, workspace,
      ConventionUnrolledMatrix<Real>{math::convention_forward<Real>(problem.forward), problem,
                                     result, n, T, segment},
      stream_of(problem), subset);
}

}  // namespace

template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              MatrixSubset subset) {
  const int n = problem.grad_output.n;
  const UnrolledPlan plan = unrolled_plan(problem.forward, n, max_block_team_n);
  switch (plan.form) {
    case UnrolledForm::seeds_team:
      return unrolled_detail::seeds_unrolled_teams(problem, result, plan.transposed, subset);
    case UnrolledForm::convention_team:
      return unrolled_detail::convention_unrolled_teams(problem, result, plan.transposed, subset);
    case UnrolledForm::log_domain:
      return unrolled_per_thread(problem, result, subset);
  }
}

template void unrolled(const BackwardProblem<float>&, const BackwardResult<float>&, MatrixSubset);
template void unrolled(const BackwardProblem<double>&, const BackwardResult<double>&, MatrixSubset);

}  // namespace sinkgrad::cuda
