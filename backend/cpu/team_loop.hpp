#pragma once
// The CPU batch driver of the team-form solvers: every matrix is solved by a CpuTeam (one
// thread owning all n rows) whose vectors live on the stack, sized for n at compile time.

#include <cstddef>
#include <string>
#include <type_traits>

#include "backend/cpu/batch_loop.hpp"
#include "core/error.hpp"
#include "math/team.hpp"

namespace sinkgrad {

// Largest n the CPU team-form solvers accept (their vectors are fixed-size stack arrays).
inline constexpr int max_cpu_team_n = 1024;

// per_matrix(team, b, history) -> MatrixOutcome, team a math::CpuTeam<Real, Cap> with n <= Cap.
// rows_reals: what the team's rows<0..2>() use (0, or 3 n^2); storage_reals: team.storage().
template <class Real, class PerMatrix>
void solve_each_matrix_with_team(const BackwardResult<Real>& result, index_t batch, int n,
                                 PerMatrix per_matrix, std::size_t rows_reals = 0,
                                 std::size_t storage_reals = 0) {
  const auto run = [&](auto cap) {
    solve_each_matrix_on_cpu(
        result, batch, rows_reals + storage_reals, [&](index_t b, Real* work, Real* history) {
          const math::CpuTeam<Real, decltype(cap)::value> team(n, work, work + rows_reals);
          return per_matrix(team, b, history);
        });
  };
  if (n <= math::max_team_n)
    run(std::integral_constant<int, math::max_team_n>{});
  else if (n <= max_cpu_team_n)
    run(std::integral_constant<int, max_cpu_team_n>{});
  else
    throw Error("n = " + std::to_string(n) + " is above the " + std::to_string(max_cpu_team_n) +
                " that this solver supports");
}

}  // namespace sinkgrad
