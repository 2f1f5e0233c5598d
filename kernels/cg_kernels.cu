// CUDA batch drivers of `cg_plain` and `cg_corrected`: the team-form algorithms of
// solvers/cg_plain/cg_plain_math.hpp and solvers/cg_corrected/cg_corrected_math.hpp, one team
// of lanes per matrix (kernels/cuda_team.cuh).

#include "kernels/backward_kernels.hpp"
#include "kernels/cuda_team.cuh"
#include "solvers/cg_corrected/cg_corrected_math.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real>
__device__ Real* history_row(const BackwardResult<Real>& result, index_t b) {
  return result.residual_history != nullptr ? result.residual_history + b * result.history_stride
                                            : nullptr;
}

template <class Real, class Shape>
struct CgPlainTeam {
  BackwardResult<Real> result;
  math::PlainSystem system;
  math::CgSettings<Real> settings;
  __device__ MatrixOutcome operator()(const CudaTeam<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const TileMatrices<Real, Shape> mats(R, G, team.lane(), team.n());
    return math::cg_plain_matrix(team, mats, system, settings, history_row(result, b));
  }
};

template <class Real, class Shape>
struct CgCorrectedTeam {
  BackwardResult<Real> result;
  math::CgSettings<Real> settings;
  __device__ MatrixOutcome operator()(const CudaTeam<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t b) const {
    const TileMatrices<Real, Shape> mats(R, G, team.lane(), team.n());
    return math::cg_corrected_matrix(team, mats, settings, history_row(result, b));
  }
};

}  // namespace

template <class Real>
void cg_plain(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
              math::PlainSystem system, math::CgSettings<Real> settings) {
  const int n = problem.grad_output.n;
  with_team_shape(n, [&](auto shape) {
    using Shape = decltype(shape);
    launch_teams<Real, Shape>(problem.forward_output.data, problem.grad_output.data,
                              result.grad_logits.data, result.status, result.iterations,
                              problem.grad_output.batch, n,
                              CgPlainTeam<Real, Shape>{result, system, settings}, Staging::on);
  });
}

template <class Real>
void cg_corrected(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  math::CgSettings<Real> settings) {
  const int n = problem.grad_output.n;
  with_team_shape(n, [&](auto shape) {
    using Shape = decltype(shape);
    launch_teams<Real, Shape>(problem.forward_output.data, problem.grad_output.data,
                              result.grad_logits.data, result.status, result.iterations,
                              problem.grad_output.batch, n,
                              CgCorrectedTeam<Real, Shape>{result, settings}, Staging::on);
  });
}

template void cg_plain(const BackwardProblem<float>&, const BackwardResult<float>&,
                       math::PlainSystem, math::CgSettings<float>);
template void cg_plain(const BackwardProblem<double>&, const BackwardResult<double>&,
                       math::PlainSystem, math::CgSettings<double>);
template void cg_corrected(const BackwardProblem<float>&, const BackwardResult<float>&,
                           math::CgSettings<float>);
template void cg_corrected(const BackwardProblem<double>&, const BackwardResult<double>&,
                           math::CgSettings<double>);

}  // namespace sinkgrad::cuda
