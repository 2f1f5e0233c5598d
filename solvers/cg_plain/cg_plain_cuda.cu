// CUDA batch driver of `cg_plain`: the team-form algorithm of solvers/cg_plain/cg_plain_math.hpp,
// one team of lanes per matrix (backend/cuda/launch.cuh), on R and G as stored or, when the
// forward's last step normalised columns, transposed in the tiles.

#include "solvers/cg_plain/cg_plain_cuda.hpp"

#include "backend/cuda/launch.cuh"
#include "solvers/cg_plain/cg_plain_math.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real, class Shape>
struct CgPlainTeam {
  BackwardResult<Real> result;
  math::PlainSystem system;
  math::CgSettings<Real> settings;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const TileMatrices<Real, Shape> mats(R, G, team.lane(), team.n());
    return math::cg_plain_matrix(team, mats, system, settings, history_row(result, b));
  }
};

}  // namespace

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings) {
  const int n = problem.grad_output.n;
  // The plain system eliminates α with R 1 = 1: after a forward that left the columns exact it
  // is solved for R^T and G^T, read transposed into the tiles (solvers/implicit/exact_side.hpp).
  const bool transposed = last_step_normalises_columns(problem.forward.convention);
  with_orientation(transposed, [&](auto orientation) {
    with_team_shape(n, [&](auto shape) {
      using Shape = decltype(shape);
      launch_teams<Real, Shape, decltype(orientation)::value>(
          problem.forward_output.data, problem.grad_output.data, result.grad_logits.data,
          result.status, result.iterations, problem.grad_output.batch, n,
          CgPlainTeam<Real, Shape>{result, system, settings}, Staging::on, 0, stream_of(problem),
          result.diagnostics.relative_residual);
    });
  });
}

template void cg_plain(const BackwardProblem<float>&, const BackwardResult<float>&,
                       math::PlainSystem, math::CgSettings<float>);
template void cg_plain(const BackwardProblem<double>&, const BackwardResult<double>&,
                       math::PlainSystem, math::CgSettings<double>);
}  // namespace sinkgrad::cuda
