#pragma once
// The team-form launches of the CUDA `unrolled` (n <= 1024), declared here and compiled in
// unrolled_cuda_teams_*.cu, one unit per precision and form, so that a build compiles them in
// parallel (each instantiates every team shape in both orientations). Those units are generated
// in the build tree, one line per template in solvers/unrolled/CMakeLists.txt
// (cmake/instantiations.cmake). Compiled only when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "kernels/cuda/matrix_subset.hpp"

namespace sinkgrad::cuda::unrolled_detail {

// The replay of the seeds' forward (solvers/unrolled/unrolled_team.hpp); transposed: on every
// M^T with G^T, the gradient stored transposed back (rows_first without eps).
template <class Real>
void seeds_unrolled_teams(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                          bool transposed, MatrixSubset subset);

// The replay of a convention's forward (solvers/unrolled/convention_unrolled_team.hpp),
// transposed when its last step normalises columns.
template <class Real>
void convention_unrolled_teams(const BackwardProblem<Real>& problem,
                               const BackwardResult<Real>& result, MatrixSubset subset);

// Throws the error of a replay whose checkpointed tape does not fit a CUDA block.
[[noreturn]] void too_long(int n, int T);

}  // namespace sinkgrad::cuda::unrolled_detail
