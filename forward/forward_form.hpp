#pragma once
// Which text of the forward computes a batch, chosen the same way by the CPU and the CUDA
// drivers (sinkhorn_forward.cpp, forward_cuda.cu): each passes the largest n its team form
// takes (the CPU's 64, so that the default forward above 64 keeps the bits of the log-domain
// loop, docs/math.md; CUDA's 1024).

#include "core/forward_spec.hpp"

namespace sinkgrad {

enum class ForwardForm {
  seeds_team,         // the seeds' forward in team form (forward_team.hpp)
  convention_team,    // a forward with eps or tilekernels in team form (convention_team.hpp)
  seeds_matrix,       // the default forward one matrix at a time (log_domain.hpp)
  convention_matrix,  // any other, one matrix at a time (convention_forward.hpp); every n for
                      // a convention without a team form (has_team_form)
};

struct ForwardPlan {
  ForwardForm form;
  // The team forms run on every M^T and store R transposed back: the forwards whose last step
  // normalises columns (rows_first, tilekernels), so that the team's last step is a row
  // normalisation as in the seeds' forward.
  bool transposed;
};

inline ForwardPlan forward_plan(const ForwardSpec& spec, int n, int max_team_n) {
  if (n > max_team_n || !has_team_form(spec.convention))
    return {is_default_forward(spec) ? ForwardForm::seeds_matrix : ForwardForm::convention_matrix,
            false};
  return {is_seeds_forward_up_to_transpose(spec) ? ForwardForm::seeds_team
                                                 : ForwardForm::convention_team,
          last_step_normalises_columns(spec.convention)};
}

}  // namespace sinkgrad
