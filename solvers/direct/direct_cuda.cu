// CUDA batch driver of `direct` (solvers/direct/direct_math.hpp). The corrected system for
// n <= 64 runs in team form (solvers/direct/direct_team.hpp), one team of lanes per matrix
// (backend/cuda/launch.cuh); the plain system (Jacobi eigendecomposition) and larger n run one
// matrix per thread, with S, its factor or eigenvectors in shared memory.

#include "backend/cuda/launch.cuh"
#include "backend/cuda/per_matrix_launch.cuh"
#include "solvers/direct/direct_cuda.hpp"
#include "solvers/direct/direct_math.hpp"
#include "solvers/direct/direct_team.hpp"

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

// R's row and column stay in registers only for n <= 8: above, with the factor's rows and
// columns and the replicated solution there too, they would push the kernel into spills
// (ptxas, sm_90: n = 16 in float64 spills with them and uses 180 registers without).
template <class Real, class Shape>
struct DirectCorrectedTeam {
  __device__ MatrixOutcome operator()(const CudaTeam<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t) const {
    const TileMatrices<Real, Shape, Shape::cap <= 8> mats(R, G, team.lane(), team.n());
    return math::direct_corrected_team<Real>(team, mats);
  }
};

}  // namespace

template <class Real>
void direct(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
            math::SchurSystem system) {
  const int n = problem.grad_output.n;
  if (system == math::SchurSystem::corrected && n <= math::max_team_n) {
    with_team_shape(n, [&](auto shape) {
      using Shape = decltype(shape);
      // Not staged: direct is bound by the latency of its n-round solves, so its speed is how
      // many blocks fit at once, which the staging's shared memory halves at n = 32.
      launch_teams<Real, Shape>(problem.forward_output.data, problem.grad_output.data,
                                result.grad_logits.data, result.status, result.iterations,
                                problem.grad_output.batch, n, DirectCorrectedTeam<Real, Shape>{},
                                Staging::off, 0, stream_of(problem));
    });
    return;
  }
  launch_per_matrix<Real>(result, problem.grad_output.batch,
                          static_cast<std::size_t>(math::direct_workspace(n, system)),
                          DirectMatrix<Real>{problem, result, n, system}, stream_of(problem));
}

template void direct(const BackwardProblem<float>&, const BackwardResult<float>&,
                     math::SchurSystem);
template void direct(const BackwardProblem<double>&, const BackwardResult<double>&,
                     math::SchurSystem);

}  // namespace sinkgrad::cuda
