// CUDA batch drivers of `cg_plain` and `cg_corrected` (solvers/cg_plain/cg_plain_math.hpp,
// solvers/cg_corrected/cg_corrected_math.hpp): CG vectors and marginals in shared memory.

#include "kernels/backward_kernels.hpp"
#include "kernels/per_matrix_launch.cuh"
#include "solvers/cg_corrected/cg_corrected_math.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real>
struct CgPlainMatrix {
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  math::PlainSystem system;
  math::CgSettings<Real> settings;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* history) const {
    return math::cg_plain_matrix(problem.forward_output.matrix(b), problem.grad_output.matrix(b),
                                 result.grad_logits.matrix(b), n, system, settings, work, history);
  }
};

template <class Real>
struct CgCorrectedMatrix {
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  math::CgSettings<Real> settings;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* history) const {
    return math::cg_corrected_matrix(problem.forward_output.matrix(b),
                                     problem.grad_output.matrix(b), result.grad_logits.matrix(b), n,
                                     settings, work, history);
  }
};

}  // namespace

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings) {
  const int n = problem.grad_output.n;
  launch_per_matrix<Real>(result, problem.grad_output.batch,
                          static_cast<std::size_t>(math::cg_plain_workspace(n, system)),
                          CgPlainMatrix<Real>{problem, result, n, system, settings});
}

template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings) {
  const int n = problem.grad_output.n;
  launch_per_matrix<Real>(result, problem.grad_output.batch,
                          static_cast<std::size_t>(math::cg_corrected_workspace(n)),
                          CgCorrectedMatrix<Real>{problem, result, n, settings});
}

template void cg_plain(const BackwardProblem<float>&, const BackwardResult<float>&,
                       math::PlainSystem, math::CgSettings<float>);
template void cg_plain(const BackwardProblem<double>&, const BackwardResult<double>&,
                       math::PlainSystem, math::CgSettings<double>);
template void cg_corrected(const BackwardProblem<float>&, const BackwardResult<float>&,
                           math::CgSettings<float>);
template void cg_corrected(const BackwardProblem<double>&, const BackwardResult<double>&,
                           math::CgSettings<double>);

}  // namespace sinkgrad::cuda
