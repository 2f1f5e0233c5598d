#pragma once
// The CUDA launch of the team-form CG solvers on the exact side (exact_side.hpp): one team per
// matrix (kernels/cuda/launch.cuh) on R and G as stored or, after a forward whose last step
// normalised columns, read transposed into the tiles and the gradient stored transposed back;
// the bodies store CG's final relative residual into the diagnostics where they ask for it
// (store_residual).

#include "core/backward_problem.hpp"
#include "kernels/cuda/launch.cuh"

namespace sinkgrad::cuda {

// body_of(shape) -> the team body for that TeamShape / BlockShape.
template <class Real, class BodyOf>
void launch_teams_on_exact_rows(const BackwardProblem<Real>& problem,
                                const BackwardResult<Real>& result, BodyOf body_of) {
  const int n = problem.grad_output.n;
  with_orientation(last_step_normalises_columns(problem.forward.convention), [&](auto orientation) {
    const auto launch = [&](auto shape) {
      launch_teams<Real, decltype(shape), decltype(orientation)::value>(
          problem.forward_output.data, problem.grad_output.data, result.grad_logits.data,
          result.status, result.iterations, problem.grad_output.batch, n, body_of(shape),
          Staging::on, 0, stream_of(problem));
    };
    // Float32 n = 5 .. 8 in one thread, as the forward: a team of 8 lanes spends most of its
    // issue slots on its exchanges. Float64 keeps the team: one thread's registers would spill.
    constexpr SmallMatrices small =
        sizeof(Real) == 4 ? SmallMatrices::one_thread_to_8 : SmallMatrices::one_thread;
    with_team_shape<small>(n, launch);
  });
}

// The leader stores a CG outcome's final relative residual where the diagnostics ask for it.
template <class Real, class Team>
__device__ MatrixOutcome store_residual(const Team& team, const BackwardResult<Real>& result,
                                        index_t b, MatrixOutcome outcome) {
  if (result.diagnostics.relative_residual != nullptr && team.leader())
    result.diagnostics.relative_residual[b] = Real(outcome.residual);
  return outcome;
}

}  // namespace sinkgrad::cuda
