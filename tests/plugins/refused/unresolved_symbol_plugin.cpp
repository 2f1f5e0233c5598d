// A plugin that needs a symbol no loaded library provides (as when it was linked against
// another build of a dependency): dlopen fails, and the loader must pass its reason on.

#include "core/plugin_abi.hpp"

extern "C" int sinkgrad_test_function_that_nobody_defines(void);

namespace {

void register_solvers(sinkgrad::SolverRegistry&) {
  sinkgrad_test_function_that_nobody_defines();
}

}  // namespace

SINKGRAD_PLUGIN(register_solvers);
