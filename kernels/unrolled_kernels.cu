// CUDA batch driver of `unrolled` (solvers/unrolled/unrolled_math.hpp): the potentials of the
// replay in shared memory, the adjoint W in the gradient buffer itself.

#include <string>

#include "kernels/backward_kernels.hpp"
#include "kernels/per_matrix_launch.cuh"
#include "solvers/unrolled/unrolled_math.hpp"

namespace sinkgrad::cuda {
namespace {

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

// Shared memory per matrix aimed at: 512 matrices resident per multiprocessor (228 KB) keep
// enough threads in flight; a longer T is checkpointed into that, and only when even the
// smallest checkpointed workspace does not fit does a matrix get more (fewer per block).
constexpr long long target_bytes_per_matrix = 448;

}  // namespace

template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  long long capacity = target_bytes_per_matrix / static_cast<long long>(sizeof(Real));
  int segment = math::unrolled_segment_length(n, T, capacity);
  for (int threads = detail::max_threads_per_block; segment == 0 && threads >= 1; threads /= 2) {
    capacity = static_cast<long long>(max_workspace_reals<Real>(threads));
    segment = math::unrolled_segment_length(n, T, capacity);
  }
  if (segment == 0)
    throw Error("unrolled on cuda: n = " + std::to_string(n) + ", T = " + std::to_string(T) +
                " needs more on-chip memory for the checkpointed potentials than a CUDA block "
                "has; use --device cpu or a smaller T");
  const auto workspace = static_cast<std::size_t>(math::unrolled_workspace(n, T, segment));
  launch_per_matrix<Real>(result, problem.grad_output.batch, workspace,
                          UnrolledMatrix<Real>{problem, result, n, T, segment});
}

template void unrolled(const BackwardProblem<float>&, const BackwardResult<float>&);
template void unrolled(const BackwardProblem<double>&, const BackwardResult<double>&);

}  // namespace sinkgrad::cuda
