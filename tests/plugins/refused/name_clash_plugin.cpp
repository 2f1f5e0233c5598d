// A plugin whose second solver takes the name of a built-in one: the loader must refuse the
// whole plugin (its first solver must not appear either).

#include <memory>

#include "core/plugin_abi.hpp"
#include "core/solver_registry.hpp"

namespace {

class NeverSolves : public sinkgrad::BackwardSolver {
 public:
  using BackwardSolver::BackwardSolver;

 protected:
  void solve_cpu(const sinkgrad::BackwardProblem<float>&,
                 const sinkgrad::BackwardResult<float>&) const override {}
  void solve_cpu(const sinkgrad::BackwardProblem<double>&,
                 const sinkgrad::BackwardResult<double>&) const override {}
};

void add(sinkgrad::SolverRegistry& registry, const char* name) {
  sinkgrad::SolverInfo info{name, "test solver", {sinkgrad::Device::cpu}, {}, {}};
  registry.add(info, [info](const sinkgrad::OptionValues& options) {
    return std::make_unique<NeverSolves>(info, options);
  });
}

void register_solvers(sinkgrad::SolverRegistry& registry) {
  add(registry, "clash_test_unique_name");
  add(registry, "unrolled");
}

}  // namespace

SINKGRAD_PLUGIN(register_solvers);
