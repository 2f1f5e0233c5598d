#pragma once
// The failure exit of the team-form solvers (kernels/team.hpp).

#include "core/status.hpp"
#include "kernels/numeric.hpp"
#include "kernels/team.hpp"

namespace sinkgrad::math {

// A failed matrix gets NaN everywhere (its status says why), never a plausible-looking value.
template <class Real, class Team, class Matrices>
SINKGRAD_HD MatrixOutcome team_fail(const Team& team, const Matrices& mats, SolveStatus status,
                                    int iterations = 0) {
  const int n = team.n();
  team.sync();  // other lanes may still read these rows (a vote does not order shared memory)
  team.each([&](Slot s) {
    const auto& grad = mats.grad_row(s);
    for (int j = 0; j < n; ++j) grad[j] = quiet_nan<Real>();
  });
  return {status, iterations};
}

}  // namespace sinkgrad::math
