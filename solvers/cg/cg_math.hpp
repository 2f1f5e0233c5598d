#pragma once
// Conjugate gradients for one small symmetric system, run by a team (math/team.hpp)
// on the CPU or the GPU (Eigen's loop, in the shape of PETSc's KSP: stop on
// ||r|| <= tolerance ||b||, report why it stopped). Every dot product is a team sum in the
// canonical order, so all lanes take the same branches and both devices give the same bits;
// products are added with one rounding (fma_of), the same on both.

#include "core/status.hpp"
#include "math/numeric.hpp"
#include "math/team.hpp"

namespace sinkgrad::math {

template <class Real>
struct CgSettings {
  int max_iterations;
  Real tolerance;  // relative to ||b||
};

// A vector of the system: P components per row slot (P = 1: the n x n Schur systems; P = 2:
// [α; β] of the 2n block system).
template <class Team, int P>
struct CgVector {
  typename Team::Vec part[P];
};

template <class Real, class Team, int P>
SINKGRAD_HD Real dot(const Team& team, const CgVector<Team, P>& a, const CgVector<Team, P>& b) {
  return team.sum([&](Slot s) {
    Real sum = 0;
    for (int q = 0; q < P; ++q) sum = fma_of(a.part[q][s], b.part[q][s], sum);
    return sum;
  });
}

// Solves A x = b from x = 0, or A x = b - mean(b) 1 with remove_mean (P = 1). A.apply(team, p,
// Ap). history, when not null, receives ||r_k|| for k = 0 .. max_iterations (NaN after the last
// iteration performed), written by the leader.
template <class Real, class Team, int P, class Operator>
SINKGRAD_HD MatrixOutcome conjugate_gradient(const Team& team, const Operator& A,
                                             const CgVector<Team, P>& b, CgVector<Team, P>& x,
                                             CgSettings<Real> settings, Real* history,
                                             bool remove_mean = false) {
  CgVector<Team, P> r, p, Ap;
  const bool record = history != nullptr && team.leader();
  if (record) fill(history, settings.max_iterations + 1, quiet_nan<Real>());
  Real rr;
  if (P == 1 && remove_mean) {
    // sum b and sum b^2 in one exchange, and r^T r = sum b^2 - (sum b)^2 / n. The mean's own
    // sum before r^T r's made cg_corrected at n = 16 and 32 1.2-3.3% slower on an H200 than
    // without it; in one exchange, 0.3-1.1%. The difference loses nothing where the mean is
    // small beside b; where it is not (the case the mean is removed for), r^T r is summed.
    const SumPair<Real> sums = team.sum2([&](Slot s) { return b.part[0][s]; },
                                         [&](Slot s) { return b.part[0][s] * b.part[0][s]; });
    const Real mean = sums.first * (Real(1) / Real(team.n()));
    team.each([&](Slot s) {
      x.part[0][s] = 0;
      r.part[0][s] = p.part[0][s] = b.part[0][s] - mean;
    });
    const Real mean_part = sums.first * mean;  // n mean^2
    rr = mean_part <= sums.second * Real(1.0 / 1024) ? sums.second - mean_part
                                                     : dot<Real>(team, r, r);
  } else {
    team.each([&](Slot s) {
      for (int q = 0; q < P; ++q) {
        x.part[q][s] = 0;
        r.part[q][s] = p.part[q][s] = b.part[q][s];
      }
    });
    rr = dot<Real>(team, r, r);
  }
  const Real threshold = settings.tolerance * settings.tolerance * rr;
  if (record) history[0] = sqrt_of(rr);
  if (rr <= threshold) return {SolveStatus::ok, 0};  // includes b = 0
  for (int it = 1; it <= settings.max_iterations; ++it) {
    A.apply(team, p, Ap);
    const Real curvature = dot<Real>(team, p, Ap);
    if (curvature == Real(0) || !is_finite(curvature)) return {SolveStatus::breakdown, it - 1};
    const Real step = rr / curvature;
    team.each([&](Slot s) {
      for (int q = 0; q < P; ++q) {
        x.part[q][s] = fma_of(step, p.part[q][s], x.part[q][s]);
        r.part[q][s] = fma_of(-step, Ap.part[q][s], r.part[q][s]);
      }
    });
    const Real rr_next = dot<Real>(team, r, r);
    if (record) history[it] = sqrt_of(rr_next);
    if (!is_finite(rr_next)) return {SolveStatus::breakdown, it};
    if (rr_next <= threshold) return {SolveStatus::ok, it};
    const Real ratio = rr_next / rr;
    team.each([&](Slot s) {
      for (int q = 0; q < P; ++q) p.part[q][s] = fma_of(ratio, p.part[q][s], r.part[q][s]);
    });
    rr = rr_next;
  }
  return {SolveStatus::not_converged, settings.max_iterations};
}

}  // namespace sinkgrad::math
