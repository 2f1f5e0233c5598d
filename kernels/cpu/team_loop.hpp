#pragma once
// The CPU batch driver of the team-form solvers: every matrix is solved by a CpuTeam (one
// thread owning all n rows) whose vectors live on the stack, sized for n at compile time.

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>  // std::type_identity, std::integral_constant
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/batch_loop.hpp"
#include "kernels/cpu/parallel_failure.hpp"
#include "kernels/lanes.hpp"
#include "kernels/team.hpp"

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

// The batch in parallel, W consecutive matrices at a time (grouped) or one at a time:
// group(first, scratch) handles matrices first .. first + W - 1 and returns the mask of those it
// finished (bit w: matrix first + w); one(b, scratch) handles each of the others, the last
// batch % W, and every matrix when not grouped. make_scratch() gives each thread its scratch.
// What the scratch or a matrix throws is rethrown after the parallel region
// (parallel_failure.hpp).
template <int W, class MakeScratch, class Group, class One>
void each_in_lane_groups(index_t batch, bool grouped, MakeScratch make_scratch, Group group,
                         One one) {
  const index_t groups = grouped ? batch / W : 0;
  const index_t singles = batch - groups * W;
  ParallelFailure failure;
#pragma omp parallel
  {
    std::optional<decltype(make_scratch())> scratch;
    failure.run([&] { scratch.emplace(make_scratch()); });
#pragma omp for schedule(static)
    for (index_t g = 0; g < groups + singles; ++g) {
      failure.run([&] {
        if (g >= groups) {
          one(groups * W + (g - groups), *scratch);
          return;
        }
        const unsigned done = group(g * W, *scratch);
        for (int w = 0; w < W; ++w)
          if (!(done >> w & 1)) one(g * W + w, *scratch);
      });
    }
  }
  failure.rethrow();
}

// A thread's scratch for each_in_lane_groups: Lanes for a group, Reals for one matrix.
template <class Real, int W>
struct LaneScratch {
  LaneScratch(std::size_t lane_count, std::size_t real_count)
      : lanes(lane_count), reals(real_count) {}
  std::vector<math::Lanes<Real, W>> lanes;
  std::vector<Real> reals;
};

// solve_each_matrix_with_team, with the n of a compile-time team (4, 8, 16) taken
// W = math::register_lanes<Real> matrices at a time, one per SIMD lane (kernels/lanes.hpp):
// per_group(std::integral_constant<int, n>, first, lanes_work, work) solves matrices first ..
// first + W - 1 and returns the mask of those it solved (bit w: matrix first + w, outcome
// `solved`); per_matrix solves the others, the last batch % W, every matrix of other n, and all
// of them when a convergence record is asked for. lanes_work: group_lanes Lanes<Real, W>;
// work: rows_reals + storage_reals Reals.
template <class Real, class PerGroup, class PerMatrix>
void solve_each_matrix_with_lanes(const BackwardResult<Real>& result, index_t batch, int n,
                                  PerGroup per_group, std::size_t group_lanes, MatrixOutcome solved,
                                  PerMatrix per_matrix, std::size_t rows_reals,
                                  std::size_t storage_reals) {
  constexpr int W = math::register_lanes<Real>;
  with_cpu_team<Real>(n, [&](auto team_type) {
    using Team = typename decltype(team_type)::type;
    const bool grouped = Team::fixed_n > 0 && result.residual_history == nullptr;
    each_in_lane_groups<W>(
        batch, grouped,
        [&] { return LaneScratch<Real, W>(grouped ? group_lanes : 0, rows_reals + storage_reals); },
        [&](index_t first, LaneScratch<Real, W>& scratch) {
          unsigned done = 0;
          if constexpr (Team::fixed_n > 0)
            done = per_group(std::integral_constant<int, Team::fixed_n>{}, first,
                             scratch.lanes.data(), scratch.reals.data());
          for (int w = 0; w < W; ++w)
            if (done >> w & 1) record(result, first + w, solved);
          return done;
        },
        [&](index_t b, LaneScratch<Real, W>& scratch) {
          const Team team(n, scratch.reals.data(), scratch.reals.data() + rows_reals);
          record(result, b, per_matrix(team, b, history_of(result, b)));
        });
  });
}

}  // namespace sinkgrad
