#pragma once
// The `project` option of the implicit solvers (cg_plain, cg_corrected, direct): whether the
// gradient is projected onto the forward's invariant subspace (invariant_side.hpp).

#include "core/solver_options.hpp"
#include "solvers/common/invariant_side.hpp"

namespace sinkgrad {

inline OptionSpec project_option_spec() {
  return OptionSpec::choice("project", {"true", "false"},
                            "true: remove from each line of the gradient along the side the "
                            "forward is invariant to (the side its first step normalises, "
                            "without eps; rows for tilekernels and megatron_main whatever eps; "
                            "none for mhc_triton) "
                            "its sum times R's line over R's sum, as the exact gradient has zero "
                            "sums there; false: the implicit formula as it is");
}

// The side to project, in the coordinates of a solve that reads R and G transposed or not;
// none when `project` is off or the forward has no invariant side (projected_side).
inline math::GradientSide projection_side(bool project, const ForwardSpec& spec, bool transposed) {
  if (!project) return math::GradientSide::none;
  const math::GradientSide side = projected_side(spec);
  return transposed ? transposed_side(side) : side;
}

// The same from the solver's `project` option.
inline math::GradientSide projection_side(const OptionValues& options, const ForwardSpec& spec,
                                          bool transposed) {
  return projection_side(options.text("project") == "true", spec, transposed);
}

}  // namespace sinkgrad
