#pragma once
// Which text of `unrolled` replays a batch, chosen the same way by the CPU and the CUDA
// drivers (unrolled_solver.cpp, unrolled_cuda.cu): each passes the largest n its teams hold.

#include "core/forward_spec.hpp"

namespace sinkgrad {

enum class UnrolledForm {
  seeds_team,       // the seeds' forward in team form (unrolled_team.hpp)
  convention_team,  // a forward with eps or tilekernels in team form (convention_unrolled_team.hpp)
  log_domain,       // every convention one matrix at a time (convention_unrolled.hpp); every n
                    // for a convention without a team form (has_team_form)
};

struct UnrolledPlan {
  UnrolledForm form;
  // The team forms replay M^T with G^T and store the gradient transposed back: the forwards
  // whose last step normalises columns (rows_first, tilekernels), so that the team's last step
  // is a row normalisation as in the seeds' forward.
  bool transposed;
};

inline UnrolledPlan unrolled_plan(const ForwardSpec& spec, int n, int max_team_n) {
  const bool transposed = last_step_normalises_columns(spec.convention);
  if (n > max_team_n || !has_team_form(spec.convention)) return {UnrolledForm::log_domain, false};
  if (is_seeds_forward_up_to_transpose(spec)) return {UnrolledForm::seeds_team, transposed};
  return {UnrolledForm::convention_team, transposed};
}

}  // namespace sinkgrad
