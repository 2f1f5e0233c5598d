#pragma once
// The version of sinkgrad this tool was built from (the CMake project version), written into
// every output file and printed by `sinkgrad --version`.

#ifndef SINKGRAD_VERSION
#error "SINKGRAD_VERSION must be defined by the build (cli/CMakeLists.txt)"
#endif

namespace sinkgrad::cli {

inline constexpr const char* version = SINKGRAD_VERSION;

}  // namespace sinkgrad::cli
