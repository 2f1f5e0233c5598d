#pragma once
// Per-matrix plain implicit gradient (assumes r = c = 1) by CG, run by a team on the CPU or the
// GPU. Exact only when the forward has converged; otherwise it solves the "wrong" system on
// purpose: measuring that error is what the framework is for. With `project` the gradient is
// then projected onto the forward's invariant subspace (implicit_operators.hpp), which the plain
// gradient leaves when the forward has not converged.

#include "solvers/common/cg_math.hpp"
#include "solvers/common/implicit_operators.hpp"

namespace sinkgrad::math {

enum class PlainSystem { schur, block };

// record: a residual history or a monitor (solvers/common/cg_monitor.hpp).
template <class Real, class Team, class Matrices, class Record>
SINKGRAD_HD MatrixOutcome cg_plain_matrix(const Team& team, const Matrices& mats,
                                          PlainSystem system, CgSettings<Real> settings,
                                          const Record& record,
                                          GradientSide project = GradientSide::none) {
  TeamMarginals<Team> m;
  if (!team_marginals<Real>(team, mats, m))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  // Each iterate's gradient, for a record that asks for them: what the solve stopped there
  // would return (the steps below, on x_k).
  const auto monitor = with_iterate_gradients<Real>(
      team, record, [&](const auto&, int, const auto& x, Real unscale) {
        typename Team::Vec ab[2];  // [α; β], α solved from β where x is β alone
        constexpr int parts = sizeof(x.part) / sizeof(x.part[0]);
        team.each([&](Slot s) {
          for (int q = 0; q < parts; ++q) ab[2 - parts + q][s] = x.part[q][s] * unscale;
        });
        if constexpr (parts == 1) team_schur_alpha<Real>(team, mats, false, m, ab[1], ab[0]);
        if (!team_assemble_gradient<Real>(team, mats, ab[0], ab[1]) ||
            !team_project_gradient<Real>(team, mats, project))
          team_fail<Real>(team, mats, SolveStatus::breakdown);
      });
  settings.indefinite = true;  // I - RᵀR and the block system, away from convergence
  MatrixOutcome outcome;
  bool finite = false;
  if (system == PlainSystem::schur) {
    CgVector<Team, 1> b{}, beta{};
    Real terms = 0;
    team_schur_rhs<Real>(team, mats, false, m, b.part[0], &terms);
    outcome = conjugate_gradient(team, PlainSchurOperator<Real, Matrices>{mats}, b, beta, settings,
                                 monitor, false, rhs_rounding_floor(settings, terms),
                                 /*gauge_one=*/true);
    typename Team::Vec alpha;
    team_schur_alpha<Real>(team, mats, false, m, beta.part[0], alpha);
    finite = team_assemble_gradient<Real>(team, mats, alpha, beta.part[0]);
  } else {
    CgVector<Team, 2> rhs{}, x{};  // [s_r; s_c] and [α; β]
    team.each([&](Slot s) {
      rhs.part[0][s] = m.s_r[s];
      rhs.part[1][s] = m.s_c[s];
    });
    // [s_r; s_c] is formed without cancellation: the relative test alone.
    outcome = conjugate_gradient(team, PlainBlockOperator<Real, Matrices>{mats}, rhs, x, settings,
                                 monitor);
    finite = team_assemble_gradient<Real>(team, mats, x.part[0], x.part[1]);
  }
  if (finite) finite = team_project_gradient<Real>(team, mats, project);
  // A breakdown keeps its last iterate: NaN only where that gives no finite gradient.
  if (!finite) return team_fail<Real>(team, mats, SolveStatus::breakdown, outcome.iterations);
  return outcome;
}

}  // namespace sinkgrad::math
