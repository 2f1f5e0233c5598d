// A plugin whose registration throws: the loader must report the plugin's own message.

#include "core/error.hpp"
#include "core/plugin_abi.hpp"

namespace {

void register_solvers(sinkgrad::SolverRegistry&) {
  throw sinkgrad::Error("this plugin needs a GPU with 1 TB of memory");
}

}  // namespace

SINKGRAD_PLUGIN(register_solvers);
