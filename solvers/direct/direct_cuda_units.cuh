#pragma once
// The definitions behind solvers/direct/direct_cuda_units.hpp. Included only by the
// direct_cuda_{teams,per_matrix}_*.cu units (generated: solvers/direct/CMakeLists.txt).

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/per_matrix_launch.cuh"
#include "solvers/direct/direct_cuda_units.hpp"
#include "solvers/direct/direct_math.hpp"
#include "solvers/direct/direct_team.hpp"

namespace sinkgrad::cuda::direct_detail {

template <class Real>
struct DirectMatrix {
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  math::SchurSystem system;
  math::GradientSide project;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::direct_matrix(problem.forward_output.matrix(b), problem.grad_output.matrix(b),
                               result.grad_logits.matrix(b), n, system, work, project);
  }
};

// R's row and column stay in registers only for n <= 8: above, with the factor's rows and
// columns and the replicated solution there too, they would push the kernel into spills
// (ptxas, sm_90: n = 16 in float64 spills with them and uses 180 registers without).
// Float64 n = 5..8: three blocks a multiprocessor asked of ptxas. Left to itself it takes 168
// registers and 20 bytes of spill for the same three blocks; asked, 168 and 4 bytes, which runs
// faster. Not at n = 16: there the same request (168 registers, 200 bytes of spill, three blocks
// instead of two) costs more in spills than the third block gains (docs/performance.md).
template <class Real, class Shape>
struct DirectCorrectedTeam {
  static constexpr int min_blocks_per_sm = sizeof(Real) == 8 && Shape::cap == 8 ? 3 : 0;
  math::GradientSide project;
  __device__ MatrixOutcome operator()(const TeamFor<Real, Shape>& team, Tile<Real> R, Tile<Real> G,
                                      index_t) const {
    const TileMatrices<Real, Shape, Shape::cap <= 8> mats(R, G, team.lane(), team.n());
    return math::direct_corrected_team<Real>(team, mats, project);
  }
};

template <class Real, ShapeGroup G>
void corrected_group(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                     math::GradientSide project) {
  const int n = problem.grad_output.n;
  with_team_shape_in<G>(n, [&](auto shape) {
    using Shape = decltype(shape);
    // Not staged: direct is bound by the latency of its n-round solves, so its speed is how
    // many blocks fit at once, which the staging's shared memory halves at n = 32.
    launch_teams<Real, Shape>(
        problem.forward_output.data, problem.grad_output.data, result.grad_logits.data,
        result.status, result.iterations, problem.grad_output.batch, n,
        DirectCorrectedTeam<Real, Shape>{project}, Staging::off, 0, stream_of(problem));
  });
}

template <class Real>
void per_matrix(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                math::SchurSystem system, math::GradientSide project) {
  const int n = problem.grad_output.n;
  launch_per_matrix<Real>(result, problem.grad_output.batch,
                          static_cast<std::size_t>(math::direct_workspace(n, system)),
                          DirectMatrix<Real>{problem, result, n, system, project},
                          stream_of(problem));
}

}  // namespace sinkgrad::cuda::direct_detail
