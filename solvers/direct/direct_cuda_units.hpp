#pragma once
// The two launches of the CUDA `direct`, declared here and compiled in direct_cuda_*.cu, one unit
// per form and precision, so that a build compiles them in parallel (the team form instantiates
// every team shape, the one-thread form the Jacobi eigendecomposition and the Cholesky). Those
// units are generated in the build tree, one line per template in solvers/direct/CMakeLists.txt
// (cmake/instantiations.cmake). Compiled only when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "solvers/common/implicit_math.hpp"  // SchurSystem

namespace sinkgrad::cuda::direct_detail {

// The corrected system in team form (solvers/direct/direct_team.hpp), n <= 1024.
template <class Real>
void corrected_teams(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                     math::GradientSide project);

// Either system, one matrix per thread (solvers/direct/direct_math.hpp), any n.
template <class Real>
void per_matrix(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                math::SchurSystem system, math::GradientSide project);

}  // namespace sinkgrad::cuda::direct_detail
