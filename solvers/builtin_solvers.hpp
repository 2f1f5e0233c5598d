#pragma once
// The built-in solvers (SINKGRAD_BUILTIN_SOLVERS in solvers/CMakeLists.txt). They are in
// SolverRegistry::global() as soon as libsinkgrad is loaded; this adds them to another registry.

namespace sinkgrad {

class SolverRegistry;

void register_builtin_solvers(SolverRegistry& registry);

}  // namespace sinkgrad
