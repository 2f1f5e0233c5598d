#pragma once
// The side of dL/dM whose sums the forward fixes at zero (docs/math.md, "The forward's invariant
// subspace"). When R does not change as a constant is added to every entry of one column of M,
// the exact gradient of the T-step forward sums to 0 down that column; the implicit formula
// R ⊙ (G - α 1^T - 1 β^T) does so only at a converged forward, so the implicit solvers may
// project their gradient onto those matrices (implicit_operators.hpp, implicit_math.hpp).

#include "core/forward_spec.hpp"

namespace sinkgrad::math {

// none: no projection; rows: every row of the gradient sums to 0; columns: every column.
enum class GradientSide { none, rows, columns };

}  // namespace sinkgrad::math

namespace sinkgrad {

// The side of M along which the forward is invariant to a constant shift: its first step
// normalises that side of exp(M) (columns_first: columns; rows_first: rows) or takes a softmax
// over it (tilekernels: rows, whatever eps). A denominator X.sum + eps with eps > 0 sees the
// shift, so columns_first and rows_first with eps have no invariant side.
inline math::GradientSide invariant_side(const ForwardSpec& spec) {
  switch (spec.convention) {
    case ForwardConvention::tilekernels:
      return math::GradientSide::rows;
    case ForwardConvention::rows_first:
      return spec.eps == 0 ? math::GradientSide::rows : math::GradientSide::none;
    case ForwardConvention::columns_first:
      return spec.eps == 0 ? math::GradientSide::columns : math::GradientSide::none;
  }
  return math::GradientSide::none;
}

// The same side seen by a solve of the transposed problem (R^T, G^T; exact_side.hpp).
inline math::GradientSide transposed_side(math::GradientSide side) {
  return side == math::GradientSide::rows      ? math::GradientSide::columns
         : side == math::GradientSide::columns ? math::GradientSide::rows
                                               : math::GradientSide::none;
}

}  // namespace sinkgrad
