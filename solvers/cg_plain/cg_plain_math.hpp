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

// The gradient of [α; β] (the Schur system: α solved from β first), assembled into mats'
// gradient and projected; false where that is not finite.
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool cg_plain_gradient(const Team& team, const Matrices& mats,
                                   const TeamMarginals<Team>& m, PlainSystem system,
                                   typename Team::Vec& alpha, const typename Team::Vec& beta,
                                   GradientSide project) {
  if (system == PlainSystem::schur) team_schur_alpha<Real>(team, mats, false, m, beta, alpha);
  return team_assemble_gradient<Real>(team, mats, alpha, beta) &&
         team_project_gradient<Real>(team, mats, project);
}

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
  // would return.
  const auto monitor =
      with_iterate_gradients<Real>(record, [&](const auto&, int, const auto& x, Real unscale) {
        typename Team::Vec ab[2];  // [α; β], α solved from β where x is β alone
        constexpr int parts = sizeof(x.part) / sizeof(x.part[0]);
        team.each([&](Slot s) {
          for (int q = 0; q < parts; ++q) ab[2 - parts + q][s] = x.part[q][s] * unscale;
        });
        if (!cg_plain_gradient<Real>(team, mats, m, system, ab[0], ab[1], project))
          team_fail<Real>(team, mats, SolveStatus::breakdown);
      });
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
    finite = cg_plain_gradient<Real>(team, mats, m, system, alpha, beta.part[0], project);
  } else {
    CgVector<Team, 2> rhs{}, x{};  // [s_r; s_c] and [α; β]
    team.each([&](Slot s) {
      rhs.part[0][s] = m.s_r[s];
      rhs.part[1][s] = m.s_c[s];
    });
    // [s_r; s_c] is formed without cancellation: the relative test alone.
    outcome = conjugate_gradient(team, PlainBlockOperator<Real, Matrices>{mats}, rhs, x, settings,
                                 monitor);
    finite = cg_plain_gradient<Real>(team, mats, m, system, x.part[0], x.part[1], project);
  }
  // A breakdown keeps its last iterate: NaN only where that gives no finite gradient.
  if (!finite) return team_fail<Real>(team, mats, SolveStatus::breakdown, outcome.iterations);
  return outcome;
}

}  // namespace sinkgrad::math
