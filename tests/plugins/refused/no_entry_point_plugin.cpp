// A shared library that is not a sinkgrad plugin: it exports a function, but not the entry
// points.

#include "core/plugin_abi.hpp"

SINKGRAD_PLUGIN_EXPORT int some_other_library_function(void) {
  return 42;
}
