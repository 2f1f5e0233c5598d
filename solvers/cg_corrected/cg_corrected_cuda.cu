// CUDA batch driver of `cg_corrected`: the team-form algorithm of
// solvers/cg_corrected/cg_corrected_math.hpp, one team of lanes per matrix
// (backend/cuda/launch.cuh).

#include "solvers/cg_corrected/cg_corrected_cuda.hpp"

#include "backend/cuda/launch.cuh"
#include "solvers/cg_corrected/cg_corrected_math.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real, class Shape>
struct CgCorrectedTeam {
  BackwardResult<Real> result;
  math::CgSettings<Real> settings;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const TileMatrices<Real, Shape> mats(R, G, team.lane(), team.n());
    return math::cg_corrected_matrix(team, mats, settings, history_row(result, b));
  }
};

}  // namespace

template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings) {
  const int n = problem.grad_output.n;
  with_team_shape(n, [&](auto shape) {
    using Shape = decltype(shape);
    launch_teams<Real, Shape>(problem.forward_output.data, problem.grad_output.data,
                              result.grad_logits.data, result.status, result.iterations,
                              problem.grad_output.batch, n,
                              CgCorrectedTeam<Real, Shape>{result, settings}, Staging::on, 0,
                              stream_of(problem), result.diagnostics.relative_residual);
  });
}

template void cg_corrected(const BackwardProblem<float>&, const BackwardResult<float>&,
                           math::CgSettings<float>);
template void cg_corrected(const BackwardProblem<double>&, const BackwardResult<double>&,
                           math::CgSettings<double>);

}  // namespace sinkgrad::cuda
