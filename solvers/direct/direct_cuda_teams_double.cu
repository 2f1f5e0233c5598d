// One instantiation of solvers/direct/direct_cuda_units.cuh (a unit of its own: see its header).
#include "solvers/direct/direct_cuda_units.cuh"

namespace sinkgrad::cuda::direct_detail {
template void corrected_teams(const BackwardProblem<double>&, const BackwardResult<double>&,
                              math::GradientSide);
}  // namespace sinkgrad::cuda::direct_detail
