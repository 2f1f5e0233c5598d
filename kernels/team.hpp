#pragma once
// Team-parallel per-matrix mathematics: one algorithm text for the CPU and the GPU.
//
// The n rows of a matrix, and the n components of every vector the algorithms use, are owned
// by the lanes of a *team*: component i belongs to lane i % W, in that lane's slot i / W. On
// the GPU a team is W lanes of one warp, or one thread for n <= 4 (kernels/cuda/launch.cuh), up to
// n = 64; above, a block of W = n rounded up to 32 threads, one row each (block_team.cuh). On
// the CPU it is one thread that owns every component (CpuTeam below). The algorithms (CG, the
// forward, the unrolled replay) are templates over the team and touch data only through:
//
//   team.n()                 the matrix size
//   team.each(f)             f(Slot) for every component this lane owns (i < n), slots ascending
//   team.sum(f)              the sum over all components of f(Slot), in the canonical order
//   team.sum2(f, g)          {team.sum(f), team.sum(g)}, the same bits, in one exchange
//   team.max(f)              the largest f(Slot) over all components
//   team.all(ok)             whether ok holds on every lane
//   team.broadcast(i, f)     f(Slot{i, k}) of the lane owning component i, on every lane (on
//                            the GPU every lane evaluates f at its slot k = i / W: f must be
//                            safe to call there, its value is discarded)
//   team.leader()            true on exactly one lane (it writes the per-matrix outputs)
//   team.share(v)            a view x[j], j < n, of the whole vector v (valid until the next
//                            share() call of this team)
//   team.rows<id>()          lane-private rows: rows[slot][j], j < cap (id 0, 1, 2: three sets)
//   team.line<id>()          a lane-private vector x[j], j < cap (id 0, 1), for values every
//                            lane computes alike (the results of team.sum or team.broadcast)
//   team.sync()              orders the team's writes to shared tiles before reads by others
//   team.storage()           team-shared scratch of the size the driver was asked for
//   team.stride()            the distance between vectors kept in storage (>= n)
//   team.store(p, v)         writes this lane's components of v to p[i] (p in storage)
//   team.load(p)             a view x[j], j < n, of a vector stored at p (after a sync())
//   Team::Vec                a vector of n components distributed like the rows, v[slot]
//   Team::cap                a compile-time bound on n: loops run j < cap and stop at n
//   Team::columns_from_rows  whether a lane reads columns out of its rows at no cost (it owns
//                            every row, in registers; then slot k = i)
//   Team::one_lane           whether one lane owns every row (slot k = i)
//
// The canonical order of a sum (the GPU's, reproduced on the CPU so that both give the same
// bits): with W = team_width(n), lane l first adds its components l, l + W, l + 2W, ... in
// that order to 0, then the W lane sums are combined pairwise, distance W/2 first, then W/4,
// down to 1 (a butterfly: every lane ends with the same value).

#include "core/host_device.hpp"

namespace sinkgrad::math {

// Largest n a team handles (two components per lane of a 32-lane warp on the GPU).
inline constexpr int max_team_n = 64;

// Lanes of the team for n: one lane owns a whole matrix up to n = 4 (its 2 n^2 entries fit in
// registers, and a team of one needs no exchange at all); above, the smallest of 8, 16, 32 that
// is >= n (32 above 32).
SINKGRAD_HD constexpr int team_width(int n) {
  return n <= 4 ? 1 : n <= 8 ? 8 : n <= 16 ? 16 : 32;
}

// A component owned by a lane: i is the row or vector index (< n), k the lane's storage slot.
struct Slot {
  int i;
  int k;
};

// x[j] of a vector or matrix row/column laid out with a stride.
template <class Real>
struct StridedView {
  Real* data;
  int stride;
  SINKGRAD_HD Real& operator[](int j) const { return data[j * stride]; }
};

// Column k of a matrix whose rows a lane holds, rows[Slot{j, j}] (a team that owns every row,
// slot k = i: Team::columns_from_rows).
template <class Rows>
struct ColumnOfRows {
  const Rows& rows;
  int k;
  SINKGRAD_HD auto operator[](int j) const { return rows[Slot{j, j}][k]; }
};

// Two team sums (team.sum2).
template <class Real>
struct SumPair {
  Real first, second;
};

// The vector of ones as a view (x[j] = 1): a product with it needs no share().
template <class Real>
struct Ones {
  SINKGRAD_HD Real operator[](int) const { return Real(1); }
};

// start + sum_j a[j] * x[j] for j < n, ascending, each term added with one rounding (fma_of);
// cap bounds n at compile time on the GPU. Above max_team_n (the GPU's block team, whose rows
// are in memory, and the CPU's large team) the loop runs to n, eight terms at a time on the GPU:
// nvcc does not unroll a loop of 1024 fully, and rolled, each term waited for its load.
template <int cap, class A, class X>
SINKGRAD_HD auto dot_n(const A& a, const X& x, int n, decltype(a[0] * x[0]) start = 0)
    -> decltype(a[0] * x[0]) {
  decltype(a[0] * x[0]) sum = start;
  if constexpr (cap > max_team_n) {
    SINKGRAD_UNROLL_8
    for (int j = 0; j < n; ++j) sum = fma_of(a[j], x[j], sum);
  } else {
    SINKGRAD_UNROLL
    for (int j = 0; j < cap; ++j) {
      if (j >= n) break;
      sum = fma_of(a[j], x[j], sum);
    }
  }
  return sum;
}

// The bound of a SINKGRAD_UNROLL loop over a team's components whose body stops at n: the
// compile-time cap up to max_team_n, so that nvcc unrolls the loop fully and a lane's rows stay
// in registers; n above (the block team and the CPU's large team), where the rows are in memory
// and the loop stays rolled (unrolled to 1024 bodies, a block-team unit took minutes to
// compile). A macro: written as a function call, the same bound changes the warp teams' code.
#define SINKGRAD_UNROLL_BOUND(cap, n) ((cap) > ::sinkgrad::math::max_team_n ? (n) : (cap))

// The same bound for a function that unrolls to its template argument cap, or rolls to n where
// that is 0 (forward/log_domain.hpp's write_log_domain_line).
template <int cap>
inline constexpr int unrolled_cap = cap > max_team_n ? 0 : cap;

// The canonical sum of value(0 .. n) (see above), on one thread (no copy of the n values: an
// array of CpuTeam's cap, 1024, written up to n only, read as maybe uninitialised by GCC 13).
template <class Real, class Value>
SINKGRAD_HD Real canonical_sum(int n, const Value& value) {
  return lane_order_sum<Real>(n, team_width(n), value);
}

// The CPU team: one thread owns all n components (slot k = i); n <= Cap. N > 0: n is N, known
// at compile time (Cap = N), so that the loops over a vector unroll and vectorise as the GPU's
// fixed shapes do; the operations, and so the bits, are those of the run-time n.
template <class Real, int Cap = max_team_n, int N = 0>
class CpuTeam {
  static_assert(N == 0 || N == Cap, "a team of compile-time n holds exactly n");

 public:
  static constexpr int cap = Cap;
  static constexpr int fixed_n = N;
  static constexpr bool columns_from_rows = false;  // a contiguous transposed copy vectorises
  static constexpr bool one_lane = true;

  struct Vec {
    Real v[Cap];
    Real& operator[](Slot s) { return v[s.k]; }
    const Real& operator[](Slot s) const { return v[s.k]; }
  };

  // scratch: 3 n^2 Reals for rows<0..2>() (null when the algorithm uses none); storage: what
  // storage() returns.
  explicit CpuTeam(int n, Real* scratch = nullptr, Real* storage = nullptr)
      : n_(n), scratch_(scratch), storage_(storage) {}

  int n() const {
    if constexpr (N > 0)
      return N;
    else
      return n_;
  }
  void sync() const {}

  Real* storage() const { return storage_; }
  int stride() const { return n(); }
  void store(Real* where, const Vec& v) const {
    for (int i = 0; i < n(); ++i) where[i] = v.v[i];
  }
  const Real* load(const Real* where) const { return where; }

  template <class F>
  void each(F&& f) const {
    for (int i = 0; i < n(); ++i) f(Slot{i, i});
  }

  bool leader() const { return true; }

  template <class F>
  Real sum(F&& f) const {
    return canonical_sum<Real>(n(), [&](int i) { return f(Slot{i, i}); });
  }

  template <class F, class G>
  SumPair<Real> sum2(F&& f, G&& g) const {
    return {sum(f), sum(g)};
  }

  template <class F>
  Real max(F&& f) const {
    Real largest = f(Slot{0, 0});
    for (int i = 1; i < n(); ++i) largest = max_of(largest, f(Slot{i, i}));
    return largest;
  }

  bool all(bool ok) const { return ok; }

  template <class F>
  Real broadcast(int i, F&& f) const {
    return f(Slot{i, i});
  }

  const Real* share(const Vec& v) const { return v.v; }

  struct Rows {
    Real* data;
    int n;
    Real* operator[](Slot s) const { return data + s.i * (N > 0 ? N : n); }
  };
  template <int id>
  Rows rows() const {
    return {scratch_ + id * n() * n(), n()};
  }

  struct Line {
    Real v[Cap];
    Line() {}  // uninitialised, as the array it stands for
    Real& operator[](int j) { return v[j]; }
    const Real& operator[](int j) const { return v[j]; }
  };
  template <int id>
  Line line() const {
    return Line();
  }

 private:
  int n_;
  Real* scratch_;
  Real* storage_;
};

// The CPU's view of one problem: R, G and the gradient of one matrix, row-major n x n; or, with
// transposed, the same read transposed: row i of every view is column i of the stored matrix and
// the gradient is written transposed back, so that a team solves the problem of R^T and G^T
// (or M^T) without a copy (the plain systems' exact side, rows_first without eps:
// core/forward_spec.hpp).
template <class Real, bool transposed = false>
struct CpuMatrices {
  const Real* R;
  const Real* G;
  Real* grad;
  int n;
  // Row i of the matrix the team works on, and its column i.
  template <class T>
  StridedView<T> line(T* x, int i) const {
    return transposed ? StridedView<T>{x + i, n} : StridedView<T>{x + i * n, 1};
  }
  template <class T>
  StridedView<T> cross(T* x, int i) const {
    return transposed ? StridedView<T>{x + i * n, 1} : StridedView<T>{x + i, n};
  }
  StridedView<const Real> R_row(Slot s) const { return line(R, s.i); }
  StridedView<const Real> R_col(Slot s) const { return cross(R, s.i); }
  StridedView<const Real> G_row(Slot s) const { return line(G, s.i); }
  StridedView<const Real> G_col(Slot s) const { return cross(G, s.i); }
  StridedView<Real> grad_row(Slot s) const { return line(grad, s.i); }
  StridedView<Real> grad_col(Slot s) const { return cross(grad, s.i); }
};

// The CPU's view of one problem of the solvers that read the logits: M in place of R.
template <class Real, bool transposed = false>
struct CpuLogitMatrices : CpuMatrices<Real, transposed> {
  StridedView<const Real> M_row(Slot s) const { return this->R_row(s); }
  StridedView<const Real> M_col(Slot s) const { return this->R_col(s); }
};

}  // namespace sinkgrad::math
