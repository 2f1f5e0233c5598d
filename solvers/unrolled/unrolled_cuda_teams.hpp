#pragma once
// The team-form launches of the CUDA `unrolled` (n <= 1024), declared here and compiled in
// unrolled_cuda_teams_*.cu, one unit per precision, form and shape group, so that a build
// compiles them in parallel (each instantiates its group's team shapes in both orientations;
// n > 32 runs in the block team, MidMatrices::block_team).
// Those units are generated in the build tree, one line per template in
// solvers/unrolled/CMakeLists.txt (cmake/instantiations.cmake). Compiled only when the build has
// CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "kernels/cuda/matrix_subset.hpp"
#include "kernels/cuda/shape_group.hpp"

namespace sinkgrad::cuda::unrolled_detail {

// The replay of the seeds' forward (solvers/unrolled/unrolled_team.hpp) for the n of group G;
// transposed: on every M^T with G^T, the gradient stored transposed back (rows_first without
// eps).
template <class Real, ShapeGroup G>
void seeds_unrolled_group(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                          bool transposed, MatrixSubset subset);

// The replay of a convention's forward (solvers/unrolled/convention_unrolled_team.hpp) for the
// n of group G; transposed as for the seeds' (unrolled_plan: when its last step normalises
// columns).
template <class Real, ShapeGroup G>
void convention_unrolled_group(const BackwardProblem<Real>& problem,
                               const BackwardResult<Real>& result, bool transposed,
                               MatrixSubset subset);

template <class Real>
void seeds_unrolled_teams(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                          bool transposed, MatrixSubset subset) {
  with_shape_group<MidMatrices::block_team>(problem.grad_output.n, [&](auto group) {
    seeds_unrolled_group<Real, decltype(group)::value>(problem, result, transposed, subset);
  });
}

template <class Real>
void convention_unrolled_teams(const BackwardProblem<Real>& problem,
                               const BackwardResult<Real>& result, bool transposed,
                               MatrixSubset subset) {
  with_shape_group<MidMatrices::block_team>(problem.grad_output.n, [&](auto group) {
    convention_unrolled_group<Real, decltype(group)::value>(problem, result, transposed, subset);
  });
}

// Throws the error of a replay whose checkpointed tape does not fit a CUDA block.
[[noreturn]] void too_long(int n, int T);

}  // namespace sinkgrad::cuda::unrolled_detail
