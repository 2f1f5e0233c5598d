// One instantiation of solvers/unrolled/unrolled_cuda_teams.cuh (a unit of its own: see its
// header).
#include "solvers/unrolled/unrolled_cuda_teams.cuh"

namespace sinkgrad::cuda::unrolled_detail {
template void seeds_unrolled_teams(const BackwardProblem<float>&, const BackwardResult<float>&,
                                   bool, MatrixSubset);
}  // namespace sinkgrad::cuda::unrolled_detail
