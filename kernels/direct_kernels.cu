// CUDA batch driver of `direct` (solvers/direct/direct_math.hpp): S, its factor (and, for the
// plain system, the eigenvectors) in shared memory, one matrix per thread.

#include "kernels/backward_kernels.hpp"
#include "kernels/per_matrix_launch.cuh"
#include "solvers/direct/direct_math.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real>
struct DirectMatrix {
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  math::SchurSystem system;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::direct_matrix(problem.forward_output.matrix(b), problem.grad_output.matrix(b),
                               result.grad_logits.matrix(b), n, system, work);
  }
};

}  // namespace

template <class Real>
void direct(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
            math::SchurSystem system) {
  const int n = problem.grad_output.n;
  launch_per_matrix<Real>(result, problem.grad_output.batch,
                          static_cast<std::size_t>(math::direct_workspace(n, system)),
                          DirectMatrix<Real>{problem, result, n, system});
}

template void direct(const BackwardProblem<float>&, const BackwardResult<float>&,
                     math::SchurSystem);
template void direct(const BackwardProblem<double>&, const BackwardResult<double>&,
                     math::SchurSystem);

}  // namespace sinkgrad::cuda
