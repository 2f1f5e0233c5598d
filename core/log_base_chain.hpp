#pragma once
// The implicit formulas give dL/d(log B), the gradient with respect to the log of the forward's
// base B (docs/math.md, "Bases that are no scaling of exp(M)"). Where B is a diagonal scaling of
// exp(M) that is dL/dM on the side the forward sees; elsewhere it is carried to M by the base's
// own derivative, one row of one matrix at a time, written once for the host pass
// (core/backward_solver.cpp) and the CUDA kernel (kernels/cuda/log_base_chain.cu):
//   softmax_rows(M) + eps:  s = softmax(row), w = s / (s + eps),  g <- w g - s (w . g)
//   |M| + eps:              g <- g sign(M) / (|M| + eps)
//
// A row is carried by a team of carry_width(n) lanes, entry k on lane k % width: on the GPU that
// many lanes of a warp, a warp carrying 32 / width neighbouring rows at a time; on the CPU one
// thread playing every lane (RowLanes). Both add a row's sums in the same order.

#include <cstdint>

#include "core/backward_problem.hpp"
#include "core/forward_spec.hpp"
#include "core/host_device.hpp"
#include "core/types.hpp"

namespace sinkgrad {

// Whether a solver writing dL/d(log B) needs the logits to finish its gradient under `spec`: the
// base is no diagonal scaling of exp(M). exp(M - shift) is one, and softmax_rows(M) without eps;
// softmax_rows(M) + eps and |M| + eps are not.
inline bool carries_log_base_gradient(const ForwardSpec& spec) {
  const ForwardBase base = forward_recipe(spec.convention).base;
  return base == ForwardBase::abs || (base == ForwardBase::softmax_rows && spec.eps != 0);
}

// The largest n whose rows one lane carries. Up to it the CUDA solves on the exact side carry
// their own gradient in their kernel, a row per thread, where a separate pass would cost more
// than the solve (solvers/common/exact_side.cuh; SolverInfo::cuda_carry_max_n).
inline constexpr int one_lane_carry_max_n = 8;

// The lanes that carry one row: one up to n = 8 (a warp's 32 rows lie in a few cache lines, and a
// lone lane needs no exchange); 8 above, so that 8 neighbouring lanes read a whole 32-byte sector
// of floats while each lane owns n / 8 entries to share the row's exchanges and per-row work over
// (docs/performance.md, "The carry to M").
SINKGRAD_HD constexpr int carry_width(int n) {
  return n <= one_lane_carry_max_n ? 1 : 8;
}

// One thread playing the carry_width(n) lanes of a row's team. each(f): f(k) for every entry;
// sum(value): the sum of value(k) in the team's order (lane l adds its entries l, l + width, ...
// ascending to 0, then the lane sums combine pairwise, distance width / 2 first, down to 1);
// max(value): the largest value(k).
class RowLanes {
 public:
  SINKGRAD_HD explicit RowLanes(int n) : n_(n) {}

  template <class F>
  SINKGRAD_HD void each(F&& f) const {
    for (int k = 0; k < n_; ++k) f(k);
  }

  template <class F>
  SINKGRAD_HD auto sum(F&& value) const -> decltype(value(0)) {
    return math::lane_order_sum<decltype(value(0))>(n_, carry_width(n_), value);
  }

  template <class F>
  SINKGRAD_HD auto max(F&& value) const -> decltype(value(0)) {
    auto top = value(0);
    for (int k = 1; k < n_; ++k) top = math::max_of(top, value(k));
    return top;
  }

 private:
  int n_;
};

namespace math {

// g d log(|m| + eps) / dm = g / (m + eps sign(m)), for the carry and unrolled's base step alike:
// 0 at m = 0, where |m| has no slope, but a non-finite g stays so (a failed solve's NaN, e.g.
// eps = 0 and a zero row of M).
template <class Real>
SINKGRAD_HD Real through_abs_base(Real m, Real g, Real eps) {
  if (m == Real(0)) return is_finite(g) ? Real(0) : g;
  return g / (m + (m > Real(0) ? eps : -eps));
}

}  // namespace math

// One row of g (n entries, in place) from the same row of M, for base `base` with `eps`, by the
// row team `lanes` (RowLanes, or the GPU's warp lanes). M and g: anything indexed by the entry
// (pointers, or a tile's strided row and registers where a solve carries its own gradient).
// A non-finite M or g leaves a non-finite g (the solvers have already marked that matrix). A finite
// g stays finite: the softmax's row is bounded by (1 + n) max |g|, and under |M| + eps the implicit
// g is R ⊙ (G - α 1ᵀ - 1 βᵀ) with R proportional to |M| + eps, which the division takes out.
template <class Real, class Lanes, class LogitsRow, class GradientRow>
SINKGRAD_HD void carry_row_to_logits(const Lanes& lanes, ForwardBase base, Real eps,
                                     const LogitsRow& M, const GradientRow& g) {
  if (base == ForwardBase::abs) {
    lanes.each([&](int k) { g[k] = math::through_abs_base(M[k], g[k], eps); });
    return;
  }
  // softmax_rows: the softmax is recomputed where it is used, so any n fits a lane.
  const Real top = lanes.max([&](int k) { return M[k]; });
  const Real inverse = Real(1) / lanes.sum([&](int k) { return math::exp_of(M[k] - top); });
  const auto softmax = [&](int k) { return math::exp_of(M[k] - top) * inverse; };
  const Real dot = lanes.sum([&](int k) {  // w . g
    const Real s = softmax(k);
    return s / (s + eps) * g[k];
  });
  lanes.each([&](int k) {
    const Real s = softmax(k);
    g[k] = s / (s + eps) * g[k] - s * dot;
  });
}

// Whether row `row` (b n + i) of a result is carried: not where its matrix's gradient is already
// dL/dM (status fallback: unrolled's exact one).
template <class Real>
SINKGRAD_HD bool carries_result_row(const BackwardResult<Real>& result, int n, index_t row) {
  // A 32-bit division where the row fits: the GPU emulates the 64-bit one in ~70 instructions.
  const index_t b = row <= index_t(0xffffffff)
                        ? index_t(static_cast<std::uint32_t>(row) / static_cast<std::uint32_t>(n))
                        : row / n;
  return result.status[b] != SolveStatus::fallback;
}

}  // namespace sinkgrad
