#pragma once
// The reverse replay of a team-form forward (solvers/unrolled/unrolled_team.hpp and
// convention_unrolled_team.hpp): the tape of its scaling vectors or potentials in team storage,
// checkpointed when it does not fit (its size: unrolled_workspace below), and the loop that runs
// the forward, then its steps back.

#include "kernels/team.hpp"

namespace sinkgrad::math {

// X_ij = exp(log B_ij + f_i + g_j), an entry of the iterate after a row (rows = true) or column
// normalisation, for the log-domain replays: its exponent summed as the forward summed it, log
// B + the other side's potential first, then the normalised side's. That sum is at most the
// logsumexp the potential came from, so the exponent stays <= 0 to rounding even where the
// potentials are rounded by more than 1 (|M| past about 1e7 in float32, 1e15 in float64); in
// the other order it overflowed from about 1e10 (float32) and 1e20 (float64) on.
template <class Real>
SINKGRAD_HD Real normalised_entry(Real log_b, Real f, Real g, bool rows) {
  return exp_of(rows ? log_b + g + f : log_b + f + g);
}

// Workspace (in Reals) for segment length L: checkpoints + one segment of f and g. The last
// segment runs on from the forward's state, so only the segments before it have a checkpoint
// (one vector less per side: at T = 20 that keeps the team kernels of the eps forwards at the
// default's occupancy, n = 4 and 16, float32).
SINKGRAD_HD long long unrolled_workspace(int n, int T, int L, bool two_sided = false) {
  const long long checkpoints = (T + L - 1) / L - 1;
  // two_sided: the team tapes of forwards with eps, both vectors at a checkpoint, and one vector
  // before the tape (convention_unrolled_team.hpp).
  const long long sides = two_sided ? 2 : 1;
  return static_cast<long long>(n) * (sides * checkpoints + 2LL * L + 1 + (two_sided ? 1 : 0));
}

// The most Reals a CPU replay of T steps keeps per thread at size n: its whole tape (the CPU
// forms do not checkpoint), at least unrolled_workspace(n, T, T, true) and the log-domain form's
// convention_unrolled_workspace(n, T, T). What the memory estimates before a solve count.
inline long long unrolled_cpu_tape_reals(int n, int T) {
  return static_cast<long long>(n) * (2LL * T + 3);
}

// Longest segment (fewest recomputations) that fits into capacity Reals; 0 if none fits.
SINKGRAD_HD int unrolled_segment_length(int n, int T, long long capacity, bool two_sided = false) {
  if (unrolled_workspace(n, T, T, two_sided) <= capacity) return T;  // store all, no recompute
  int best = 0;
  for (int L = 1; L < T; ++L)
    if (unrolled_workspace(n, T, L, two_sided) <= capacity) best = L;
  return best;
}

// The longest segment that fits into capacity Reals, else the one of the smallest tape (which
// the caller then finds room for, or refuses).
SINKGRAD_HD int unrolled_segment_or_smallest(int n, int T, long long capacity,
                                             bool two_sided = false) {
  const int longest = unrolled_segment_length(n, T, capacity, two_sided);
  if (longest > 0) return longest;
  int smallest = 1;
  for (int L = 2; L <= T; ++L)
    if (unrolled_workspace(n, T, L, two_sided) < unrolled_workspace(n, T, smallest, two_sided))
      smallest = L;
  return smallest;
}

// The tape in team storage, stride Reals per vector: row-side vectors at the checkpoints
// t = 0, L, .., last segment's start - L (two_sided: each followed by the column-side one; the
// last segment starts from the forward's own state); one segment's row-side vectors at
// t = start .. start + L (row(k), k = t - start) and column-side vectors at
// t = start + 1 .. start + L (column(k), k = t - start - 1). Two-sided checkpoints serve the
// forwards with eps, whose step t reads both vectors of step t - 1; their reverse steps do not
// (convention_unrolled_team.hpp), so a segment holds one side as the default's.
// Two-sided tapes start one vector into the storage (convention_unrolled_team.hpp keeps the
// softmax's normalisers there); the offset is part of the int index, so that the GPU forms
// each address with one 32-bit product and add.
template <class Real, bool two_sided>
struct ReplayTape {
  static constexpr int sides = two_sided ? 2 : 1;
  static constexpr int first = two_sided ? 1 : 0;
  Real* base;
  int stride;
  int L;
  int segments;
  SINKGRAD_HD Real* checkpoint(int s) const { return base + (first + s * sides) * stride; }
  SINKGRAD_HD Real* row(int k) const {
    return base + (first + (segments - 1) * sides + k) * stride;
  }
  SINKGRAD_HD Real* column(int k) const {
    return base + (first + (segments - 1) * sides + L + 1 + k) * stride;
  }
};

template <class Team, class Real>
SINKGRAD_HD void load_own(const Team& team, const Real* where, typename Team::Vec& v) {
  team.each([&](Slot s) { v[s] = where[s.i]; });
}

// Runs the forward from replay.start() and calls replay.seed() at step T (own and all
// components of u_T, all of v_T), then replay.back() for t = T .. 1 with the step's vectors
// (own components of u_t, v_t and u_{t-1}, all of v_t). A replay whose step 1 may differ from
// the others (replay.first_step_differs(): tilekernels' has no column half) gives that step as
// first_step() and first_back(), which run outside the loops: a test in every step made the
// eps and TileKernels kernels slower (docs/performance.md).
// team.storage(): unrolled_workspace(team.stride(), T, L, Replay::two_sided) Reals.
template <class Real, class Team, class Replay>
SINKGRAD_HD void replay_in_reverse(const Team& team, int T, int L, Replay& replay) {
  using Vec = typename Team::Vec;
  constexpr bool two_sided = Replay::two_sided;
  const int segments = (T + L - 1) / L;
  const ReplayTape<Real, two_sided> tape{team.storage(), team.stride(), L, segments};
  const auto store_state = [&](Real* where, const Vec& u, const Vec& v) {
    team.store(where, u);
    if constexpr (two_sided) team.store(where + team.stride(), v);
  };
  constexpr bool peels = requires(Replay & r, Vec & x) {
    r.first_step(x, x);
  };
  bool peel = false;  // step 1 by first_step and first_back
  if constexpr (peels) peel = replay.first_step_differs();
  Vec u, v;
  replay.start(u, v);
  if (segments > 1) store_state(tape.checkpoint(0), u, v);
  const int last_start = (segments - 1) * L;
  // The peeled step 1 repeats what the loops do after a step (checkpoint, tape) and before a
  // step back (its vectors) rather than share those lines with them through lambdas: that
  // changed the default kernel's generated code, whose loops are kept as benchmarked.
  int first = 1;
  if constexpr (peels) {
    if (peel && last_start >= 1) {
      replay.first_step(u, v);
      if (L == 1 && last_start > 1) store_state(tape.checkpoint(1), u, v);  // the loop's t = 1
      first = 2;
    }
  }
  for (int t = first; t <= last_start; ++t) {
    replay.step(u, v, t);
    if (t % L == 0 && t < last_start) store_state(tape.checkpoint(t / L), u, v);
  }
  for (int s = segments - 1; s >= 0; --s) {
    const int start = s * L;
    const int end = start + L < T ? start + L : T;
    const bool peeled = peel && start == 0;  // this segment holds step 1, which is peeled
    team.sync();  // other lanes may still read the previous segment's vectors
    if (s != segments - 1) {
      load_own(team, tape.checkpoint(s), u);
      if constexpr (two_sided) load_own(team, tape.checkpoint(s) + team.stride(), v);
      if constexpr (requires { replay.resume(u, v, start); }) replay.resume(u, v, start);
    }
    team.store(tape.row(0), u);
    if constexpr (peels) {
      if (peeled) {
        replay.first_step(u, v);
        team.store(tape.column(0), v);
        team.store(tape.row(1), u);
      }
    }
    for (int t = start + 1 + peeled; t <= end; ++t) {
      replay.step(u, v, t);
      team.store(tape.column(t - start - 1), v);
      team.store(tape.row(t - start), u);
    }
    team.sync();
    // The seed reads u from the tape, not through a share(): a segment then makes an even
    // number of shares, so the team's exchange buffers alternate the same way every step.
    if (s == segments - 1)
      replay.seed(u, v, team.load(tape.row(end - start)), team.load(tape.column(end - start - 1)));
    const int stop = peeled ? 1 : start;  // as start + peeled (ptxas: without spills at n = 4)
    for (int t = end; t > stop; --t) {
      Vec u_t, v_t, u_prev;
      load_own(team, tape.row(t - start), u_t);
      load_own(team, tape.column(t - start - 1), v_t);
      load_own(team, tape.row(t - start - 1), u_prev);
      replay.back(u_t, v_t, team.load(tape.column(t - start - 1)), u_prev, t);
    }
    if constexpr (peels) {
      if (peeled) {
        Vec u_1, v_1, u_0;
        load_own(team, tape.row(1), u_1);
        load_own(team, tape.column(0), v_1);
        load_own(team, tape.row(0), u_0);
        replay.first_back(u_1, v_1, team.load(tape.column(0)), u_0, 1);
      }
    }
  }
}

}  // namespace sinkgrad::math
