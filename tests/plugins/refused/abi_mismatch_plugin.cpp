// A plugin built for a future plugin ABI: the loader must refuse it before registering.

#include <stdexcept>

#include "core/plugin_abi.hpp"

SINKGRAD_PLUGIN_EXPORT int sinkgrad_plugin_abi_version(void) {
  return SINKGRAD_PLUGIN_ABI_VERSION + 1;
}

SINKGRAD_PLUGIN_EXPORT int sinkgrad_plugin_register(sinkgrad::SolverRegistry*) {
  throw std::logic_error("an ABI-mismatched plugin must never be asked to register");
}
