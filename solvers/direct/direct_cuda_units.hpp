#pragma once
// The two launches of the CUDA `direct`, declared here and compiled in direct_cuda_*.cu, one unit
// per form and precision (the team form one per shape group too), so that a build compiles them
// in parallel (the team form instantiates its group's team shapes, the one-thread form the
// Jacobi eigendecomposition and the Cholesky). Those
// units are generated in the build tree, one line per template in solvers/direct/CMakeLists.txt
// (cmake/instantiations.cmake). Compiled only when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/backward_problem.hpp"
#include "kernels/cuda/shape_group.hpp"
#include "solvers/common/implicit_math.hpp"  // SchurSystem

namespace sinkgrad::cuda::direct_detail {

// The corrected system in team form (solvers/direct/direct_team.hpp) for the n of group G.
template <class Real, ShapeGroup G>
void corrected_group(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                     math::GradientSide project);

// The corrected system in team form, n <= 1024.
template <class Real>
void corrected_teams(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                     math::GradientSide project) {
  with_shape_group(problem.grad_output.n, [&](auto group) {
    corrected_group<Real, decltype(group)::value>(problem, result, project);
  });
}

// Either system, one matrix per thread (solvers/direct/direct_math.hpp), any n.
template <class Real>
void per_matrix(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                math::SchurSystem system, math::GradientSide project);

}  // namespace sinkgrad::cuda::direct_detail
