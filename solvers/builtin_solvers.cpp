#include "solvers/builtin_solvers.hpp"

#include "core/solver_registry.hpp"

namespace sinkgrad {

void register_builtin_solvers(SolverRegistry& registry) {
  register_unrolled(registry);
  register_cg_plain(registry);
  register_cg_corrected(registry);
  register_direct(registry);
}

}  // namespace sinkgrad
