#pragma once
// The CPU batch driver of the team-form solvers: every matrix is solved by a CpuTeam (one
// thread owning all n rows) whose vectors live on the stack, sized for n at compile time.

#include <string>

#include "core/cpu_batch_loop.hpp"
#include "core/error.hpp"
#include "core/team.hpp"

namespace sinkgrad {

// Largest n the CPU team-form solvers accept (their vectors are fixed-size stack arrays).
inline constexpr int max_cpu_team_n = 1024;

// per_matrix(team, b, history) -> MatrixOutcome, team a math::CpuTeam<Real, Cap> with n <= Cap.
template <class Real, class PerMatrix>
void solve_each_matrix_with_team(const BackwardResult<Real>& result, index_t batch, int n,
                                 PerMatrix per_matrix) {
  const auto run = [&](auto team) {
    solve_each_matrix_on_cpu(result, batch, 0, [&](index_t b, Real*, Real* history) {
      return per_matrix(team, b, history);
    });
  };
  if (n <= math::max_team_n)
    run(math::CpuTeam<Real, math::max_team_n>(n));
  else if (n <= max_cpu_team_n)
    run(math::CpuTeam<Real, max_cpu_team_n>(n));
  else
    throw Error("n = " + std::to_string(n) + " is above the " + std::to_string(max_cpu_team_n) +
                " that this solver supports");
}

}  // namespace sinkgrad
