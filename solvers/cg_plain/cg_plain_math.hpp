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

template <class Real, class Team, class Matrices>
SINKGRAD_HD MatrixOutcome cg_plain_matrix(const Team& team, const Matrices& mats,
                                          PlainSystem system, CgSettings<Real> settings,
                                          Real* history,
                                          GradientSide project = GradientSide::none) {
  TeamMarginals<Team> m;
  if (!team_marginals<Real>(team, mats, m))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  MatrixOutcome outcome;
  bool finite = false;
  if (system == PlainSystem::schur) {
    CgVector<Team, 1> b{}, beta{};
    Real terms = 0;
    team_schur_rhs<Real>(team, mats, false, m, b.part[0], &terms);
    outcome = conjugate_gradient(team, PlainSchurOperator<Real, Matrices>{mats}, b, beta, settings,
                                 history, false, rhs_rounding_floor(settings, terms),
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
                                 history);
    finite = team_assemble_gradient<Real>(team, mats, x.part[0], x.part[1]);
  }
  if (finite) finite = team_project_gradient<Real>(team, mats, project);
  // A breakdown keeps its last iterate: NaN only where that gives no finite gradient.
  if (!finite) return team_fail<Real>(team, mats, SolveStatus::breakdown, outcome.iterations);
  return outcome;
}

}  // namespace sinkgrad::math
