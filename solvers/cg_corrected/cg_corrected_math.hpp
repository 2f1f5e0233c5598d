#pragma once
// Per-matrix corrected implicit gradient by CG, run by a team on the CPU or the GPU: the Schur
// complement built from the actual marginals r, c. S = diag(c) - R^T diag(r)^-1 R is symmetric
// positive semi-definite with S 1 = 0 and the right-hand side is orthogonal to 1 (made so to
// rounding below), so CG from 0 stays in range(S) and converges in at most n - 1 steps in exact
// arithmetic. The drivers eliminate the side the forward's last step made exact (R^T and G^T
// after rows_first and tilekernels): where dL/dR is constant along it (mHC's streams that start
// as copies) the true gradient is zero, b then cancels to rounding, and CG's floor
// (rhs_rounding_floor) returns a gradient at rounding level; eliminating the other side would
// leave that cancellation to the gradient's assembly, at CG's tolerance.

#include "solvers/cg_corrected/implicit_trust.hpp"
#include "solvers/common/cg_math.hpp"
#include "solvers/common/implicit_operators.hpp"

namespace sinkgrad::math {

// The gradient of β: α solved from it, assembled into mats' gradient and projected; false
// where that is not finite.
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool cg_corrected_gradient(const Team& team, const Matrices& mats,
                                       const TeamMarginals<Team>& m, const typename Team::Vec& beta,
                                       GradientSide project) {
  typename Team::Vec alpha;
  team_schur_alpha<Real>(team, mats, true, m, beta, alpha);
  return team_assemble_gradient<Real>(team, mats, alpha, beta) &&
         team_project_gradient<Real>(team, mats, project);
}

// Whether ||grad||^2 >= bound^2 weighted_square (weighted_square: ||R ⊙ G||^2, taken before the
// gradient was written, which on the GPU goes over G); false where a square overflowed, which
// leaves the matrix to the exact fallback.
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool implicit_gradient_above(const Team& team, const Matrices& mats, Real bound,
                                         Real weighted_square) {
  const Real square = team.sum([&](Slot s) {
    const auto& grad = mats.grad_row(s);
    return dot_n<Team::cap>(grad, grad, team.n());
  });
  return square >= bound * bound * weighted_square && weighted_square < infinity<Real>();
}

// record: a residual history or a monitor (solvers/common/cg_monitor.hpp).
template <class Real, class Team, class Matrices, class Record>
SINKGRAD_HD MatrixOutcome cg_corrected_matrix(const Team& team, const Matrices& mats,
                                              CgSettings<Real> settings, const Record& record,
                                              GradientSide project = GradientSide::none,
                                              ImplicitTrust<Real> trust = {}) {
  TeamMarginals<Team> m;
  Real violation = 0, weighted_square = 0;
  const bool checked = trust.max_violation < infinity<Real>();
  const bool floored = checked && trust.gradient_floor > Real(0);
  if (!team_marginals<Real>(team, mats, m, checked ? &violation : nullptr,
                            floored ? &weighted_square : nullptr))
    return team_fail<Real>(team, mats, SolveStatus::invalid_input);
  if (!(violation <= trust.max_violation)) {
    // No iteration: the record's "not performed".
    cg_monitor<Real>(record, team).begin(team, settings.max_iterations);
    return team_fail<Real>(team, mats, SolveStatus::fallback);
  }
  CgVector<Team, 1> b{}, beta{};
  Real terms = 0;
  team_schur_rhs<Real>(team, mats, true, m, b.part[0], &terms);
  // 1^T b = 0 exactly (sum s_c = sum s_r), so b's rounded mean lies in S's null space, where CG
  // cannot reduce it: when b is far smaller than the terms it is the difference of, that mean
  // alone stayed above the tolerance, and CG stepped into the null space (n = 2: one step left
  // 2.8e-12 ||b||, the next had curvature 1e-43, the third 0, a breakdown). CG starts from b
  // with its mean removed, where it copies b: a pass of its own would read b once more, and
  // was slower on the CPU.
  const CorrectedSchurOperator<Real, Team, Matrices> schur(team, mats, m);
  // Each iterate's gradient, for a record that asks for them: what the solve stopped there
  // would return.
  const auto monitor = with_iterate_gradients<Real>(
      team, record, [&](const auto&, int, const auto& x, Real unscale) {
        typename Team::Vec beta_k;
        team.each([&](Slot s) { beta_k[s] = x.part[0][s] * unscale; });
        if (!cg_corrected_gradient<Real>(team, mats, m, beta_k, project))
          team_fail<Real>(team, mats, SolveStatus::breakdown);
      });
  const MatrixOutcome outcome = conjugate_gradient(team, schur, b, beta, settings, monitor, true,
                                                   rhs_rounding_floor(settings, terms));
  // A breakdown keeps its last iterate: NaN only where that gives no finite gradient. Its rows
  // sum to 0 to rounding (α is solved from β), its columns to CG's residual: the projection
  // moves it by about the tolerance.
  if (!cg_corrected_gradient<Real>(team, mats, m, beta.part[0], project))
    return team_fail<Real>(team, mats, SolveStatus::breakdown, outcome.iterations);
  if (floored && violation > Real(0) && outcome.status == SolveStatus::ok &&
      !implicit_gradient_above<Real>(team, mats, trust.gradient_floor * violation, weighted_square))
    return team_fail<Real>(team, mats, SolveStatus::fallback, outcome.iterations);
  return outcome;
}

}  // namespace sinkgrad::math
