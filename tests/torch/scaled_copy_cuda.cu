#include "scaled_copy.hpp"
#include "sinkgrad/plugin_cuda.cuh"

namespace sinkgrad_test {

template <class Real>
void scaled_copy_cuda(const ScaledCopy<Real>& solve) {
  sinkgrad::cuda::launch_per_matrix<Real>(solve.result, solve.problem.grad_output.batch, 0, solve,
                                          sinkgrad::cuda::stream_of(solve.problem));
}

template void scaled_copy_cuda(const ScaledCopy<float>&);
template void scaled_copy_cuda(const ScaledCopy<double>&);

}  // namespace sinkgrad_test
