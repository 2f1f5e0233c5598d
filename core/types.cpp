#include "core/types.hpp"

#include <string>

#include "core/error.hpp"
#include "core/status.hpp"

namespace sinkgrad {

std::string_view to_string(Precision precision) {
  return precision == Precision::float32 ? "float32" : "float64";
}

std::string_view to_string(Device device) {
  return device == Device::cpu ? "cpu" : "cuda";
}

Precision parse_precision(std::string_view text) {
  if (text == "float32") return Precision::float32;
  if (text == "float64") return Precision::float64;
  throw Error("unknown precision '" + std::string(text) + "' (use float32 or float64)");
}

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu;
  if (text == "cuda") return Device::cuda;
  throw Error("unknown device '" + std::string(text) + "' (use cpu or cuda)");
}

std::string_view to_string(SolveStatus status) {
  switch (status) {
    case SolveStatus::ok:
      return "ok";
    case SolveStatus::not_converged:
      return "not_converged";
    case SolveStatus::breakdown:
      return "breakdown";
    case SolveStatus::invalid_input:
      return "invalid_input";
    case SolveStatus::ill_conditioned:
      return "ill_conditioned";
    case SolveStatus::fallback:
      return "fallback";
  }
  return "unknown";
}

std::string_view describe(SolveStatus status) {
  switch (status) {
    case SolveStatus::ok:
      return "solved (CG met its tolerance; direct and unrolled finished)";
    case SolveStatus::not_converged:
      return "CG stopped at max_iterations above tolerance; the last iterate's gradient is written";
    case SolveStatus::breakdown:
      return "CG breakdown or singular factorisation; gradient is NaN";
    case SolveStatus::invalid_input:
      return "NaN/Inf in logits or grad_output, negative R, or a zero row/column of R; "
             "gradient is NaN";
    case SolveStatus::ill_conditioned:
      return "the system is singular to rounding in a direction that changes the gradient "
             "(direct plain: an eigenvalue near the cut; CG: the operator at rounding level along "
             "b, or cg_plain's true residual far above its recurrence's); gradient written but "
             "not trusted";
    case SolveStatus::fallback:
      return "the implicit solve failed or the forward was too far from converged for it; the "
             "gradient is unrolled's exact one";
  }
  return "unknown status";
}

}  // namespace sinkgrad
