// One instantiation of solvers/direct/direct_cuda_units.cuh (a unit of its own: see its header).
#include "solvers/direct/direct_cuda_units.cuh"

namespace sinkgrad::cuda::direct_detail {
template void per_matrix(const BackwardProblem<float>&, const BackwardResult<float>&,
                         math::SchurSystem, math::GradientSide);
}  // namespace sinkgrad::cuda::direct_detail
