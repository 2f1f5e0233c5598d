// CUDA batch driver of `cg_plain`: the team-form algorithm of solvers/cg_plain/cg_plain_math.hpp,
// one team of lanes per matrix (kernels/cuda/launch.cuh), on R and G as stored or, when the
// forward's last step normalised columns, transposed in the tiles.

#include "solvers/cg_plain/cg_plain_cuda.hpp"

#include "solvers/cg_plain/cg_plain_math.hpp"
#include "solvers/common/exact_side.cuh"

namespace sinkgrad::cuda {
namespace {

template <class Real, class Shape>
struct CgPlainTeam {
  BackwardResult<Real> result;
  math::PlainSystem system;
  math::CgSettings<Real> settings;
  math::GradientSide project;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const TileMatrices<Real, Shape> mats(R, G, team.lane(), team.n());
    return store_residual(
        team, result, b,
        math::cg_plain_matrix(team, mats, system, settings, history_row(result, b), project));
  }
};

}  // namespace

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings,
              math::GradientSide project) {
  // The plain system eliminates α with R 1 = 1: after a forward that left the columns exact it
  // is solved for R^T and G^T, read transposed into the tiles (solvers/common/exact_side.hpp).
  launch_teams_on_exact_rows(problem, result, [&](auto shape) {
    return CgPlainTeam<Real, decltype(shape)>{result, system, settings, project};
  });
}

template void cg_plain(const BackwardProblem<float>&, const BackwardResult<float>&,
                       math::PlainSystem, math::CgSettings<float>, math::GradientSide);
template void cg_plain(const BackwardProblem<double>&, const BackwardResult<double>&,
                       math::PlainSystem, math::CgSettings<double>, math::GradientSide);
}  // namespace sinkgrad::cuda
