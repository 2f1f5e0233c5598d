#pragma once
// The CPU batch driver of the team-form solvers: every matrix is solved by a CpuTeam (one
// thread owning all n rows) whose vectors live on the stack, sized for n at compile time.

#include <cstddef>
#include <string>
#include <type_traits>  // std::type_identity

#include "backend/cpu/batch_loop.hpp"
#include "core/error.hpp"
#include "math/team.hpp"

namespace sinkgrad {

// Largest n the CPU team-form solvers accept (their vectors are fixed-size stack arrays).
inline constexpr int max_cpu_team_n = 1024;

// Calls run(std::type_identity<Team>{}) with the CPU team for n: n at compile time for the
// sizes common in practice (4, 8, 16: their loops unroll and vectorise, the same operations in
// the same order), a run-time n up to 64 or up to max_cpu_team_n otherwise.
template <class Real, class Run>
void with_cpu_team(int n, Run&& run) {
  switch (n) {
    case 4:
      return run(std::type_identity<math::CpuTeam<Real, 4, 4>>{});
    case 8:
      return run(std::type_identity<math::CpuTeam<Real, 8, 8>>{});
    case 16:
      return run(std::type_identity<math::CpuTeam<Real, 16, 16>>{});
    default:
      break;
  }
  if (n <= math::max_team_n) return run(std::type_identity<math::CpuTeam<Real>>{});
  if (n <= max_cpu_team_n) return run(std::type_identity<math::CpuTeam<Real, max_cpu_team_n>>{});
  throw Error("n = " + std::to_string(n) + " is above the " + std::to_string(max_cpu_team_n) +
              " that this solver supports");
}

// per_matrix(team, b, history) -> MatrixOutcome, team a math::CpuTeam (with_cpu_team) of n.
// rows_reals: what the team's rows<0..2>() use (0, or 3 n^2); storage_reals: team.storage().
template <class Real, class PerMatrix>
void solve_each_matrix_with_team(const BackwardResult<Real>& result, index_t batch, int n,
                                 PerMatrix per_matrix, std::size_t rows_reals = 0,
                                 std::size_t storage_reals = 0) {
  with_cpu_team<Real>(n, [&](auto team_type) {
    using Team = typename decltype(team_type)::type;
    solve_each_matrix_on_cpu(result, batch, rows_reals + storage_reals,
                             [&](index_t b, Real* work, Real* history) {
                               const Team team(n, work, work + rows_reals);
                               return per_matrix(team, b, history);
                             });
  });
}

}  // namespace sinkgrad
