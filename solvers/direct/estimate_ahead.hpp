#pragma once
// The condition estimate of direct_lanes, its decisions per matrix but most of its solves on the
// lanes. team_cholesky_rcond branches on values, so each lane runs it with the scalar team on
// its own factor; its solves with L L^T, the bulk of its work, depend on little but the
// right-hand side. So the solves it usually asks for (1/n, the alternating vector, then the
// signs of a solution and the unit vector at its largest entry, twice) are done first on the
// lanes, and the scalar estimate takes a solution from them where its right-hand side has the
// same bits as one solved ahead, else solves itself. A solution is a function of L, L^T and the
// right-hand side alone, and a lane's solve has the scalar solve's bits, so the estimate is
// the same either way; the guesses decide only how often it solves itself.

#include <bit>
#include <cstdint>
#include <type_traits>

#include "kernels/lanes.hpp"
#include "solvers/direct/direct_team.hpp"

namespace sinkgrad::math {

// Right-hand sides and their solutions, lane w of each for matrix w.
template <class Real, int N, int W>
struct SolvedAhead {
  static constexpr int capacity = 6;
  int count = 0;
  Lanes<Real, W> rhs[capacity][N];
  Lanes<Real, W> solution[capacity][N];
};

// The scalar team of lane w, whose solves look in `ahead` first.
template <class Real, int N, int W>
struct TeamWithSolvesAhead : CpuTeam<Real, N, N> {
  TeamWithSolvesAhead(Real* scratch, const SolvedAhead<Real, N, W>& solved, int lane)
      : CpuTeam<Real, N, N>(N, scratch), ahead(solved), w(lane) {}
  const SolvedAhead<Real, N, W>& ahead;
  int w;
};

// team_cholesky_solve for TeamWithSolvesAhead (more specialised than the general one, so that
// team_cholesky_rcond's calls come here).
template <class Real, int N, int W, class Rows, class Line>
void team_cholesky_solve(const TeamWithSolvesAhead<Real, N, W>& team, const Rows& L, const Rows& Lt,
                         typename CpuTeam<Real, N, N>::Vec& x, Line& all) {
  using Bits = std::conditional_t<sizeof(Real) == 4, std::uint32_t, std::uint64_t>;
  const auto& ahead = team.ahead;
  for (int k = 0; k < ahead.count; ++k) {
    bool same = true;
    for (int i = 0; i < N; ++i)
      same &= std::bit_cast<Bits>(ahead.rhs[k][i].v[team.w]) == std::bit_cast<Bits>(x.v[i]);
    if (!same) continue;
    for (int i = 0; i < N; ++i) x.v[i] = all[i] = ahead.solution[k][i].v[team.w];
    return;
  }
  team_cholesky_solve<Real>(static_cast<const CpuTeam<Real, N, N>&>(team), L, Lt, x, all);
}

// The usual right-hand sides of team_cholesky_rcond, solved on the lanes with the factor of
// team_cholesky (L, Lt: the lanes team's rows).
template <class Real, int N, int W, class Team, class Rows>
void solve_ahead(const Team& team, const Rows& L, const Rows& Lt, SolvedAhead<Real, N, W>& ahead) {
  using Pack = Lanes<Real, W>;
  auto all = team.template line<0>();
  const auto solve = [&](auto rhs_of) {
    typename Team::Vec x;
    Pack* const rhs = ahead.rhs[ahead.count];
    for (int i = 0; i < N; ++i) x.v[i] = rhs[i] = rhs_of(i);
    team_cholesky_solve<Pack>(team, L, Lt, x, all);
    for (int i = 0; i < N; ++i) ahead.solution[ahead.count][i] = x.v[i];
    return ahead.solution[ahead.count++];
  };
  // The estimate's signs of a solution (v < 0 ? -1 : 1), and its unit vector at the first
  // largest |v_i|.
  const auto signs_of = [](const Pack* y) {
    return [y](int i) {
      Pack r;
      for (int w = 0; w < W; ++w) r.v[w] = y[i].v[w] < Real(0) ? Real(-1) : Real(1);
      return r;
    };
  };
  const auto unit_at_largest = [](const Pack* y) {
    int index[W];
    for (int w = 0; w < W; ++w) {
      index[w] = 0;
      Real largest = abs_of(y[0].v[w]);
      for (int i = 1; i < N; ++i)
        if (abs_of(y[i].v[w]) > largest) {
          largest = abs_of(y[i].v[w]);
          index[w] = i;
        }
    }
    return [index](int i) {
      Pack r;
      for (int w = 0; w < W; ++w) r.v[w] = i == index[w] ? Real(1) : Real(0);
      return r;
    };
  };
  const Pack* const first = solve([](int) { return Pack(Real(1) / Real(N)); });
  solve([](int i) {
    return Pack((i % 2 == 0 ? Real(1) : Real(-1)) * (Real(1) + Real(i) / Real(N - 1)));
  });
  for (const Pack* y = first; ahead.count < SolvedAhead<Real, N, W>::capacity;)
    y = solve(unit_at_largest(solve(signs_of(y))));
}

}  // namespace sinkgrad::math
