#pragma once
// Per-matrix corrected implicit gradient by CG, run by a team on the CPU or the GPU: the Schur
// complement built from the actual marginals r, c. S = diag(c) - R^T diag(r)^-1 R is symmetric
// positive semi-definite with S 1 = 0 and the right-hand side is orthogonal to 1 (to rounding,
// which CG does not fit: below), so CG from 0 stays in range(S) and converges in at most n - 1
// steps in exact arithmetic.

#include "solvers/cg/cg_math.hpp"
#include "solvers/implicit/implicit_operators.hpp"

namespace sinkgrad::math {

template <class Real, class Team, class Matrices>
SINKGRAD_HD MatrixOutcome cg_corrected_matrix(const Team& team, const Matrices& mats,
                                              CgSettings<Real> settings, Real* history) {
  TeamMarginals<Team> m;
  if (!team_marginals<Real>(team, mats, m))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  CgVector<Team, 1> b{}, beta{};
  team_schur_rhs<Real>(team, mats, true, m, b.part[0]);
  // CG stops at the rounding of b (schur_rhs_rounding_squared), whose part along 1 lies in S's
  // null space, where no step can remove it.
  const CorrectedSchurOperator<Real, Team, Matrices> schur(team, mats, m);
  const MatrixOutcome outcome = conjugate_gradient(team, schur, b, beta, settings, history,
                                                   schur_rhs_rounding_squared<Real>(team, m));
  if (outcome.status == SolveStatus::breakdown) return team_fail<Real>(team, mats, outcome.status);
  typename Team::Vec alpha;
  team_schur_alpha<Real>(team, mats, true, m, beta.part[0], alpha);
  if (!team_assemble_gradient<Real>(team, mats, alpha, beta.part[0]))
    return team_fail<Real>(team, mats, SolveStatus::breakdown);
  return outcome;
}

}  // namespace sinkgrad::math
