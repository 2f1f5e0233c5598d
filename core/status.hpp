#pragma once
// Per-matrix outcome of a backward solve, stored as int32 in results and HDF5 files.
// One bad matrix never spoils its neighbours: each matrix carries its own status.

#include <cstdint>
#include <string_view>

#include "core/host_device.hpp"

namespace sinkgrad {

enum class SolveStatus : std::int32_t {
  ok = 0,             // converged (iterative) or solved (direct / unrolled)
  not_converged = 1,  // CG reached max_iterations above tolerance; the last iterate is written
  breakdown = 2,      // CG breakdown (p^T A p = 0 or non-finite) or a singular factorisation
  invalid_input = 3,  // NaN/Inf in the inputs, negative R, or a zero row or column of R
  // The answer hinges on a decision within rounding of its threshold (direct plain: an
  // eigenvalue near the pseudo-inverse's cut whose keeping or dropping changes the gradient):
  // another build or device may decide the other way. The gradient is written, not trusted.
  ill_conditioned = 4,
  // The implicit solve failed, or the forward was too far from converged for it (auto's
  // max_violation): the gradient written is unrolled's exact one. A success, like ok.
  fallback = 5,
};

inline constexpr int status_count = 6;

// Whether the gradient written is the answer asked for: ok, or replaced by the exact one.
SINKGRAD_HD bool is_success(SolveStatus status) {
  return status == SolveStatus::ok || status == SolveStatus::fallback;
}

std::string_view to_string(SolveStatus status);
std::string_view describe(SolveStatus status);

}  // namespace sinkgrad

namespace sinkgrad {

// What one per-matrix solve reports back to its batch driver. residual: CG's final ||r|| / ||b||
// (SolveDiagnostics::relative_residual), NaN where no CG ran.
struct MatrixOutcome {
  SolveStatus status = SolveStatus::ok;
  int iterations = 0;
  double residual = math::quiet_nan<double>();
};

}  // namespace sinkgrad
