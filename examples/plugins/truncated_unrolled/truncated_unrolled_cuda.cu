// The CUDA variant of truncated_unrolled: the same per-matrix function as the CPU variant, run
// one matrix per GPU thread by sinkgrad's batch launcher.

#include "sinkgrad/plugin_cuda.cuh"
#include "truncated_unrolled_cuda.hpp"
#include "truncated_unrolled_math.hpp"

namespace truncated_unrolled {
namespace {

// What each GPU thread runs for its matrix b (captured by value: views and numbers only).
template <class Real>
struct TruncatedSolve {
  sinkgrad::BackwardProblem<Real> problem;
  sinkgrad::BackwardResult<Real> result;
  int k;

  __device__ sinkgrad::MatrixOutcome operator()(sinkgrad::index_t b, Real* work,
                                                Real* history) const {
    return truncated_backward_matrix(problem.logits.matrix(b), problem.grad_output.matrix(b),
                                     result.grad_logits.matrix(b), problem.grad_output.n,
                                     problem.forward_iterations, k, work, history);
  }
};

}  // namespace

template <class Real>
void solve_on_cuda(const sinkgrad::BackwardProblem<Real>& problem,
                   const sinkgrad::BackwardResult<Real>& result, int k) {
  const int n = problem.grad_output.n;
  const int steps = steps_back(k, problem.forward_iterations);
  const auto workspace = static_cast<std::size_t>(workspace_reals(n, steps));
  sinkgrad::cuda::launch_per_matrix<Real>(result, problem.grad_output.batch, workspace,
                                          TruncatedSolve<Real>{problem, result, k},
                                          sinkgrad::cuda::stream_of(problem));
}

template void solve_on_cuda(const sinkgrad::BackwardProblem<float>&,
                            const sinkgrad::BackwardResult<float>&, int);
template void solve_on_cuda(const sinkgrad::BackwardProblem<double>&,
                            const sinkgrad::BackwardResult<double>&, int);

}  // namespace truncated_unrolled
