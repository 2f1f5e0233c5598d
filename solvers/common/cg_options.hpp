#pragma once
// The options every CG solver shares, and their resolution for a given n and precision.

#include <vector>

#include "core/solver_options.hpp"
#include "solvers/common/cg_math.hpp"

namespace sinkgrad {

// "auto" tolerance: relative residual a CG in that precision reliably reaches.
template <class Real>
constexpr Real auto_cg_tolerance() {
  return sizeof(Real) == 4 ? Real(1e-5) : Real(1e-12);
}

inline std::vector<OptionSpec> cg_option_specs(const char* auto_iterations_text) {
  return {
      OptionSpec::integer("max_iterations", "auto",
                          std::string("CG iterations at most (auto: ") + auto_iterations_text + ")",
                          1, true),
      OptionSpec::real("tolerance", "auto",
                       "stop when ||r|| <= tolerance * ||b|| (auto: 1e-5 in float32, 1e-12 in "
                       "float64)",
                       0, true),
      OptionSpec::real("floor", "auto",
                       "stop also when ||r|| <= floor * u * max_j t_j, u the unit roundoff and "
                       "t_j the size of the terms whose difference is b_j: b's rounding level, "
                       "where b cancels (streams that start as copies); 0: the relative test "
                       "alone (auto: 2n; not used by cg_plain system=block)",
                       0, true),
  };
}

template <class Real>
math::CgSettings<Real> cg_settings(const OptionValues& options, int n, int auto_iterations) {
  math::CgSettings<Real> settings{};
  settings.max_iterations = options.is_auto("max_iterations")
                                ? auto_iterations
                                : options.integer_as_int("max_iterations");
  settings.tolerance = options.is_auto("tolerance") ? auto_cg_tolerance<Real>()
                                                    : static_cast<Real>(options.real("tolerance"));
  settings.floor_factor =
      options.is_auto("floor") ? Real(2 * n) : static_cast<Real>(options.real("floor"));
  return settings;
}

// Entries of a matrix's residual history: the initial residual and one per iteration (the
// iteration count does not depend on the precision).
inline int cg_history_length(const OptionValues& options, int auto_iterations) {
  return cg_settings<double>(options, 1, auto_iterations).max_iterations + 1;
}

}  // namespace sinkgrad
