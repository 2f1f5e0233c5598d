// One instantiation of solvers/unrolled/unrolled_cuda_teams.cuh (a unit of its own: see its
// header).
#include "solvers/unrolled/unrolled_cuda_teams.cuh"

namespace sinkgrad::cuda::unrolled_detail {
template void convention_unrolled_teams(const BackwardProblem<double>&,
                                        const BackwardResult<double>&, MatrixSubset);
}  // namespace sinkgrad::cuda::unrolled_detail
