#pragma once
// Registration functions of the built-in solvers, one per solver folder.

namespace sinkgrad {

class SolverRegistry;

void register_unrolled(SolverRegistry& registry);
void register_cg_plain(SolverRegistry& registry);
void register_cg_corrected(SolverRegistry& registry);
void register_direct(SolverRegistry& registry);

}  // namespace sinkgrad
