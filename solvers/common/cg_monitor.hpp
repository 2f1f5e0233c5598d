#pragma once
// What conjugate_gradient (cg_math.hpp) reports while it iterates: a policy type, as PETSc's
// KSPMonitor and Ginkgo's loggers separate the record from the solve. The record a caller
// passes is turned into one by cg_monitor(record, team): a Real* (or nullptr) is the residual
// history; any other type is taken as a monitor. A monitor has
//   begin(team, max_iterations)        before the first iteration (also for a matrix not solved)
//   residual(team, k, rr, unscale)     k = 0 .. the last iteration performed: ||r_k|| is
//                                      sqrt(rr) * unscale (formed only where recorded)
//   wants_iterates, and with it iterate(team, k, x, unscale): x_k after step k's update, in the
//                                      scaled units (x_k * unscale is the iterate); a record
//                                      that wants iterates has gradient_formed(team, k), called
//                                      once the solver has formed that iterate's gradient
// The solvers' own record (the residual history) asks for no iterate, so their kernels are the
// same with or without it; a study that scores every iterate's gradient asks for them
// (IterateGradients), on the CPU only.

#include "kernels/numeric.hpp"

namespace sinkgrad::math {

// ||r_k|| for k = 0 .. max_iterations into history (NaN after the last iteration performed),
// written by the team's leader: cg_monitor keeps the row for the leader alone, null for the
// other lanes and when not recording.
template <class Real>
struct ResidualHistory {
  static constexpr bool wants_iterates = false;
  Real* history;
  template <class Team>
  SINKGRAD_HD void begin(const Team&, int max_iterations) const {
    if (history != nullptr) fill(history, max_iterations + 1, quiet_nan<Real>());
  }
  template <class Team>
  SINKGRAD_HD void residual(const Team&, int k, Real rr, Real unscale) const {
    if (history != nullptr) history[k] = sqrt_of(rr) * unscale;
  }
};

template <class Real, class Team>
SINKGRAD_HD ResidualHistory<Real> cg_monitor(Real* history, const Team& team) {
  return {team.leader() ? history : nullptr};
}

template <class Real, class Monitor, class Team>
SINKGRAD_HD const Monitor& cg_monitor(const Monitor& monitor, const Team&) {
  return monitor;
}

// A monitor that also hands every iterate to gradient_of(team, k, x, unscale), which forms the
// gradient of that iterate in the matrix's gradient, then tells the caller's monitor
// (gradient_formed(team, k)): the per-matrix solvers wrap their caller's monitor in it where
// that monitor wants iterates (with_iterate_gradients).
template <class Inner, class GradientOf>
struct IterateGradients {
  static constexpr bool wants_iterates = true;
  Inner inner;
  GradientOf gradient_of;
  template <class Team>
  void begin(const Team& team, int max_iterations) const {
    inner.begin(team, max_iterations);
  }
  template <class Team, class Real>
  void residual(const Team& team, int k, Real rr, Real unscale) const {
    inner.residual(team, k, rr, unscale);
  }
  template <class Team, class X, class Real>
  void iterate(const Team& team, int k, const X& x, Real unscale) const {
    gradient_of(team, k, x, unscale);
    inner.gradient_formed(team, k);
  }
};

// The monitor a per-matrix solver passes to conjugate_gradient: its caller's, and where that
// wants iterates, the same wrapped so that each iterate's gradient (gradient_of) is formed.
template <class Real, class Team, class Record, class GradientOf>
SINKGRAD_HD auto with_iterate_gradients(const Team& team, const Record& record,
                                        const GradientOf& gradient_of) {
  const auto monitor = cg_monitor<Real>(record, team);
  if constexpr (decltype(monitor)::wants_iterates)
    return IterateGradients<decltype(monitor), GradientOf>{monitor, gradient_of};
  else
    return monitor;
}

}  // namespace sinkgrad::math
