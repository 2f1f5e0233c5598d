// The SINKGRAD_CUDA_STAGING override of the team kernels' staging choice (kernels/cuda/launch.cuh).

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "kernels/cuda/staging_policy.hpp"

namespace sinkgrad::cuda::detail {

namespace {

enum class Override { none, on, off };

Override read_override() {
  const char* value = std::getenv(staging_variable);
  if (value == nullptr || *value == '\0') return Override::none;
  const std::string text = value;
  if (text == "on") return Override::on;
  if (text == "off") return Override::off;
  throw Error(std::string(staging_variable) + "='" + text +
              "' is not understood: use on, off, or leave it unset for each kernel's own choice");
}

}  // namespace

Staging staging_or_override(Staging chosen) {
  static const Override forced = read_override();
  switch (forced) {
    case Override::on:
      return Staging::on;
    case Override::off:
      return Staging::off;
    default:
      return chosen;
  }
}

}  // namespace sinkgrad::cuda::detail
