// CUDA batch driver of `direct` (solvers/direct/direct_math.hpp). The corrected system for
// n <= 1024 runs in team form (solvers/direct/direct_team.hpp), one team per matrix
// (kernels/cuda/launch.cuh); the plain system (Jacobi eigendecomposition) and larger n run one
// matrix per thread, with S, its factor or eigenvectors in shared memory. Both launches are
// compiled in units of their own (solvers/direct/direct_cuda_units.hpp).

#include "kernels/cuda/block_team.cuh"
#include "solvers/direct/direct_cuda.hpp"
#include "solvers/direct/direct_cuda_units.hpp"

namespace sinkgrad::cuda {

template <class Real>
void direct(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
            math::SchurSystem system, math::GradientSide project) {
  if (system == math::SchurSystem::corrected && problem.grad_output.n <= max_block_team_n)
    return direct_detail::corrected_teams(problem, result, project);
  direct_detail::per_matrix(problem, result, system, project);
}

template void direct(const BackwardProblem<float>&, const BackwardResult<float>&, math::SchurSystem,
                     math::GradientSide);
template void direct(const BackwardProblem<double>&, const BackwardResult<double>&,
                     math::SchurSystem, math::GradientSide);

}  // namespace sinkgrad::cuda
