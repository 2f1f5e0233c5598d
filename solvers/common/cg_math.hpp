#pragma once
// Conjugate gradients for one small symmetric system, run by a team (kernels/team.hpp)
// on the CPU or the GPU (Eigen's loop, in the shape of PETSc's KSP: stop on
// ||r|| <= tolerance ||b||, report why it stopped). Every dot product is a team sum in the
// canonical order, so all lanes take the same branches and both devices give the same bits;
// products are added with one rounding (fma_of), the same on both.

#include "core/status.hpp"
#include "kernels/numeric.hpp"
#include "kernels/team.hpp"
#include "solvers/common/cg_monitor.hpp"

namespace sinkgrad::math {

template <class Real>
struct CgSettings {
  int max_iterations;
  Real tolerance;  // relative to ||b||
  // The floor under the stopping test, in multiples of the unit roundoff times the size of the
  // terms that make b (rhs_rounding_floor); 0: the relative test alone.
  Real floor_factor = 0;
  // A may be indefinite (the plain systems away from convergence): there the recurrence's
  // residual can drift from b - A x by orders of magnitude near a small eigenvalue, so a stop
  // says ok only when the true residual is within true_residual_slack of the bound too.
  bool indefinite = false;
};

// How far above the stopping bound the true residual of an indefinite solve may be and still
// say ok: rounding in A x, u ||A|| ||x||, is below it unless ||x|| is thousands of times ||b||
// in float32 (u / tolerance = 6e-3), where the gradient cancels and is not to be trusted anyway.
inline constexpr int true_residual_slack = 16;

// The absolute floor under CG's stopping test for a right-hand side b_j formed as a difference
// of terms bounded by `terms` (team_schur_rhs): its rounding error. Where b cancels to that
// level (mHC's streams that start as copies: the true gradient is zero), ||r|| <= tolerance ||b||
// asks CG to resolve rounding noise, which it cannot; the floor makes such a matrix converge at
// once to an answer at rounding level.
template <class Real>
SINKGRAD_HD Real rhs_rounding_floor(CgSettings<Real> settings, Real terms) {
  return settings.floor_factor * (Epsilon<Real>::value / 2) * terms;
}

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

// r^T r at CG's start inside which neither it nor its tolerance's share (tolerance^2 r^T r) nor
// the curvatures after it leave the normal range: 2^(min_exponent / 2) .. 2^(max_exponent / 2).
template <class Real>
struct CgStartRange;
template <>
struct CgStartRange<float> {
  static constexpr float low = 0x1p-62f, high = 0x1p64f;
};
template <>
struct CgStartRange<double> {
  static constexpr double low = 0x1p-510, high = 0x1p512;
};

// About the square root of the unit roundoff: the least Rayleigh quotient of CG's operator along
// b for which a stop at the floor says ok.
template <class Real>
struct CgRootEpsilon;
template <>
struct CgRootEpsilon<float> {
  static constexpr float value = 0x1p-12f;
};
template <>
struct CgRootEpsilon<double> {
  static constexpr double value = 0x1p-26;
};

// CG's start: x = 0, r = p = scale b, minus its mean with remove_mean (P = 1); returns r^T r.
template <class Real, class Team, int P>
SINKGRAD_HD Real cg_start(const Team& team, const CgVector<Team, P>& b, CgVector<Team, P>& x,
                          CgVector<Team, P>& r, CgVector<Team, P>& p, bool remove_mean,
                          Real scale) {
  if (P == 1 && remove_mean) {
    // sum b and sum b^2 in one exchange, and r^T r = sum b^2 - (sum b)^2 / n: the mean's own
    // sum before r^T r's would cost cg_corrected an exchange more (measured:
    // docs/performance.md). The difference loses nothing where the mean is
    // small beside b; where it is not (the case the mean is removed for), r^T r is summed.
    const SumPair<Real> sums = team.sum2([&](Slot s) { return scale * b.part[0][s]; },
                                         [&](Slot s) {
                                           const Real v = scale * b.part[0][s];
                                           return v * v;
                                         });
    const Real mean = sums.first * (Real(1) / Real(team.n()));
    team.each([&](Slot s) {
      x.part[0][s] = 0;
      r.part[0][s] = p.part[0][s] = scale * b.part[0][s] - mean;
    });
    const Real mean_part = sums.first * mean;  // n mean^2
    return mean_part <= sums.second * Real(1.0 / 1024) ? sums.second - mean_part
                                                       : dot<Real>(team, r, r);
  }
  team.each([&](Slot s) {
    for (int q = 0; q < P; ++q) {
      x.part[q][s] = 0;
      r.part[q][s] = p.part[q][s] = scale * b.part[q][s];
    }
  });
  return dot<Real>(team, r, r);
}

// ||r|| / ||b|| from r^T r and b^T b of the same scaled system: MatrixOutcome::residual. b = 0
// has x = 0 exact (0).
template <class Real>
SINKGRAD_HD double cg_relative_residual(Real rr, Real bb) {
  return bb > Real(0) ? double(sqrt_of(rr / bb)) : (rr == Real(0) ? 0.0 : quiet_nan<double>());
}

// ||scale b - A x||^2 (b without its mean with remove_mean, P = 1), x in the scaled units; Ap is
// overwritten. The mean is summed again rather than kept from cg_start: kept, it would be a value
// live through every iteration of every CG kernel, for a check only cg_plain makes, once.
template <class Real, class Team, int P, class Operator>
SINKGRAD_HD Real true_residual_square(const Team& team, const Operator& A,
                                      const CgVector<Team, P>& b, const CgVector<Team, P>& x,
                                      CgVector<Team, P>& Ap, bool remove_mean, Real scale) {
  A.apply(team, x, Ap);
  Real mean = 0;
  if (P == 1 && remove_mean)
    mean = team.sum([&](Slot s) { return scale * b.part[0][s]; }) * (Real(1) / Real(team.n()));
  return team.sum([&](Slot s) {
    Real sum = 0;
    for (int q = 0; q < P; ++q) {
      const Real r = scale * b.part[q][s] - mean - Ap.part[q][s];
      sum = fma_of(r, r, sum);
    }
    return sum;
  });
}

// Solves A x = b from x = 0, or A x = b - mean(b) 1 with remove_mean (P = 1), until
// ||r|| <= max(tolerance ||b||, floor) (floor: absolute, in b's units). A.apply(team, p, Ap).
// record: a monitor or a residual history (cg_monitor.hpp), told ||r_k|| for k = 0 .. the last
// iteration performed. On a breakdown x holds the last iterate. The outcome's residual is
// ||r|| / ||b|| at the last iterate (b without its mean with remove_mean).
template <class Real, class Team, int P, class Operator, class Record>
SINKGRAD_HD MatrixOutcome conjugate_gradient(const Team& team, const Operator& A,
                                             const CgVector<Team, P>& b, CgVector<Team, P>& x,
                                             CgSettings<Real> settings, const Record& record,
                                             bool remove_mean = false, Real floor = 0,
                                             bool gauge_one = false) {
  CgVector<Team, P> r, p, Ap;
  const auto monitor = cg_monitor<Real>(record, team);
  monitor.begin(team, settings.max_iterations);
  // Where r^T r leaves CgStartRange, CG solves for scale b, scale a power of two that brings
  // max |b| to [1, 2), and multiplies x and the residuals by 1 / scale: the same bits as the
  // unscaled solve wherever that neither over- nor underflows. (Without it a float32 G of 1e20
  // or 1e-25 made r^T r infinite or 0, and CG returned "ok" after no step.)
  Real scale = 1, unscale = 1;
  Real rr;
  // One inlined start for both passes: a second copy of it made the CG kernels slower
  // (measured: docs/performance.md).
  SINKGRAD_NO_UNROLL
  for (;;) {
    rr = cg_start(team, b, x, r, p, remove_mean, scale);
    if (scale != Real(1) || (rr >= CgStartRange<Real>::low && rr <= CgStartRange<Real>::high))
      break;
    const Real largest = team.max([&](Slot s) {
      Real m = 0;
      for (int q = 0; q < P; ++q) m = max_of(m, abs_of(b.part[q][s]));
      return m;
    });
    scale = unit_scale(largest);  // 1 for b = 0, or b not finite (a breakdown)
    if (scale == Real(1)) break;
    unscale = Real(1) / scale;  // exact, a power of two; off the path of a solve in range
  }
  const Real bb = rr;
  const auto finish = [&](SolveStatus status, int iterations, Real rr_last) {
    team.each([&](Slot s) {
      for (int q = 0; q < P; ++q) x.part[q][s] *= unscale;
    });
    return MatrixOutcome{status, iterations, cg_relative_residual(rr_last, bb)};
  };
  // The floor in the scaled units; its square may overflow to infinity, which still orders
  // right (b is then negligible beside the terms it was formed from).
  const Real scaled_floor = floor * scale;
  const Real relative = settings.tolerance * settings.tolerance * rr;
  const Real floored = scaled_floor * scaled_floor;
  const Real threshold = max_of(relative, floored);
  monitor.residual(team, 0, rr, unscale);
  if (rr <= relative) return {SolveStatus::ok, 0, cg_relative_residual(rr, bb)};  // b = 0 too
  // Where the floor alone stops CG, ok needs the operator not to be at rounding level itself
  // along b: its Rayleigh quotient there (the first step's p^T A p / p^T p; A's scale is about
  // 1) at least sqrt(eps). A near-permutation R makes S vanish with b; a residual at b's
  // rounding then says nothing of the error, and the matrix is ill_conditioned instead.
  // gauge_one (P = 1): A's small direction 1 moves no gradient (the plain system's α and β
  // shift against each other along it), so the quotient is taken on b without its mean.
  bool operator_seen = false;
  for (int it = 1; it <= settings.max_iterations; ++it) {
    A.apply(team, p, Ap);
    const Real curvature = dot<Real>(team, p, Ap);
    if (!is_finite(curvature)) return finish(SolveStatus::breakdown, it - 1, rr);
    if (it == 1) {
      Real seen = curvature, along = rr;
      if constexpr (P == 1) {
        if (gauge_one && rr <= floored) {  // r and Ap are free: CG stops here
          const Real mean = team.sum([&](Slot s) { return p.part[0][s]; }) / Real(team.n());
          team.each([&](Slot s) { r.part[0][s] = p.part[0][s] - mean; });
          along = dot<Real>(team, r, r);
          if (along <= floored) return finish(SolveStatus::ok, 0, rr);  // b is a gauge alone
          A.apply(team, r, Ap);
          seen = dot<Real>(team, r, Ap);
        }
      }
      operator_seen = seen >= CgRootEpsilon<Real>::value * along;
      if (rr <= floored)
        return finish(operator_seen ? SolveStatus::ok : SolveStatus::ill_conditioned, 0, rr);
    }
    if (curvature == Real(0)) return finish(SolveStatus::breakdown, it - 1, rr);
    const Real step = rr / curvature;
    team.each([&](Slot s) {
      for (int q = 0; q < P; ++q) {
        x.part[q][s] = fma_of(step, p.part[q][s], x.part[q][s]);
        r.part[q][s] = fma_of(-step, Ap.part[q][s], r.part[q][s]);
      }
    });
    const Real rr_next = dot<Real>(team, r, r);
    monitor.residual(team, it, rr_next, unscale);
    if constexpr (decltype(monitor)::wants_iterates) monitor.iterate(team, it, x, unscale);
    if (!is_finite(rr_next)) return finish(SolveStatus::breakdown, it, rr_next);
    if (rr_next <= threshold) {
      const bool trusted = rr_next <= relative || operator_seen;
      if (trusted && settings.indefinite) {
        // Reported with the true residual, the one that says why the solve is not trusted, as
        // the last step's in the history too.
        const Real true_rr = true_residual_square(team, A, b, x, Ap, remove_mean, scale);
        if (!(true_rr <= Real(true_residual_slack * true_residual_slack) * threshold)) {
          monitor.residual(team, it, true_rr, unscale);
          return finish(SolveStatus::ill_conditioned, it, true_rr);
        }
      }
      return finish(trusted ? SolveStatus::ok : SolveStatus::ill_conditioned, it, rr_next);
    }
    const Real ratio = rr_next / rr;
    team.each([&](Slot s) {
      for (int q = 0; q < P; ++q) p.part[q][s] = fma_of(ratio, p.part[q][s], r.part[q][s]);
    });
    rr = rr_next;
  }
  return finish(SolveStatus::not_converged, settings.max_iterations, rr);
}

}  // namespace sinkgrad::math
