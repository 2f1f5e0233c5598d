#pragma once
// The side of dL/dM whose sums the forward fixes at zero (docs/math.md, "The forward's invariant
// subspace"). When R does not change as a constant is added to every entry of one column of M,
// the exact gradient of the T-step forward sums to 0 down that column; the implicit formula
// R ⊙ (G - α 1^T - 1 β^T) does so only at a converged forward, so the implicit solvers may
// project their gradient onto those matrices (implicit_operators.hpp, implicit_math.hpp).

#include "core/forward_spec.hpp"
#include "core/log_base_chain.hpp"

namespace sinkgrad::math {

// none: no projection; rows: every row of the gradient sums to 0; columns: every column.
enum class GradientSide { none, rows, columns };

}  // namespace sinkgrad::math

namespace sinkgrad {

// The side of M along which the forward is invariant to a constant shift: its base already
// removes a shift along that side (the row softmax of tilekernels, exp(M - row max) of
// megatron_main: rows, whatever eps), or its first step normalises that side of exp(M) without
// eps (columns_first and magi2: columns; rows_first: rows). A denominator with eps > 0 sees the
// shift, and |M| none, so the others have no invariant side.
inline math::GradientSide invariant_side(const ForwardSpec& spec) {
  const ForwardRecipe recipe = forward_recipe(spec.convention);
  const auto first = recipe.rows_first ? math::GradientSide::rows : math::GradientSide::columns;
  if (recipe.base == ForwardBase::softmax_rows) return math::GradientSide::rows;
  if (recipe.base == ForwardBase::abs) return math::GradientSide::none;
  if (recipe.shift == (recipe.rows_first ? BaseShift::row_max : BaseShift::column_max))
    return first;
  return spec.eps == 0 ? first : math::GradientSide::none;
}

// The side an implicit solver projects its own result onto. Where that result is dL/d(log B),
// carried to M after the solve (core/log_base_chain.hpp), none: the carry through the row
// softmax already leaves every row of dL/dM summing to 0, and |M| + eps has no invariant side.
inline math::GradientSide projected_side(const ForwardSpec& spec) {
  return carries_log_base_gradient(spec) ? math::GradientSide::none : invariant_side(spec);
}

// The same side seen by a solve of the transposed problem (R^T, G^T; exact_side.hpp).
inline math::GradientSide transposed_side(math::GradientSide side) {
  return side == math::GradientSide::rows      ? math::GradientSide::columns
         : side == math::GradientSide::columns ? math::GradientSide::rows
                                               : math::GradientSide::none;
}

}  // namespace sinkgrad
