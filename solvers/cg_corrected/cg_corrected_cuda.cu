// CUDA batch driver of `cg_corrected`: the team-form algorithm of
// solvers/cg_corrected/cg_corrected_math.hpp, one team of lanes per matrix
// (solvers/common/exact_side.cuh), on R and G as stored or transposed in the tiles.

#include "solvers/cg_corrected/cg_corrected_cuda.hpp"

#include "solvers/cg_corrected/cg_corrected_math.hpp"
#include "solvers/common/exact_side.cuh"

namespace sinkgrad::cuda {
namespace {

template <class Real, class Shape>
struct CgCorrectedTeam {
  BackwardResult<Real> result;
  math::CgSettings<Real> settings;
  math::GradientSide project;
  math::ImplicitTrust<Real> trust;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const TileMatrices<Real, Shape> mats(R, G, team.lane(), team.n());
    return store_residual(
        team, result, b,
        math::cg_corrected_matrix(team, mats, settings, history_row(result, b), project, trust));
  }
};

}  // namespace

template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings, math::GradientSide project,
                  math::ImplicitTrust<Real> trust) {
  // The exact side eliminated, as cg_plain does (solvers/cg_corrected/cg_corrected_math.hpp).
  launch_teams_on_exact_rows(problem, result, [&](auto shape) {
    return CgCorrectedTeam<Real, decltype(shape)>{result, settings, project, trust};
  });
}

template void cg_corrected(const BackwardProblem<float>&, const BackwardResult<float>&,
                           math::CgSettings<float>, math::GradientSide, math::ImplicitTrust<float>);
template void cg_corrected(const BackwardProblem<double>&, const BackwardResult<double>&,
                           math::CgSettings<double>, math::GradientSide,
                           math::ImplicitTrust<double>);

}  // namespace sinkgrad::cuda
