// A plugin that registers a name sinkgrad must refuse, or throws out of its entry point, chosen
// by the environment variable SINKGRAD_TEST_BAD_NAMES (tests/cli/plugin_checks_test.cpp):
//   escape            a solver name holding a newline and a terminal escape sequence
//   all               a solver named "all" (reserved by `use = all`)
//   escape_description  a solver description holding a terminal escape sequence
//   empty_option      an option named ""
//   equals_option     an option named "a=b"
//   duplicate_option  the option "mode" declared twice
//   throw_raw         sinkgrad_plugin_register throws a std::runtime_error across the C boundary
//   (unset)           one valid solver, bad_names_test
// Its entry points are written by hand rather than with SINKGRAD_PLUGIN, so that one of them
// can throw; the others catch like the macro does.

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/plugin_abi.hpp"
#include "core/solver_registry.hpp"

namespace {

using namespace sinkgrad;

class NeverSolves : public BackwardSolver {
 public:
  using BackwardSolver::BackwardSolver;

 protected:
  void solve_cpu(const BackwardProblem<float>&, const BackwardResult<float>&) const override {}
  void solve_cpu(const BackwardProblem<double>&, const BackwardResult<double>&) const override {}
};

std::string& message() {
  static std::string text;
  return text;
}

void register_solvers(SolverRegistry& registry) {
  const char* variable = std::getenv("SINKGRAD_TEST_BAD_NAMES");
  const std::string mode = variable != nullptr ? variable : "";
  if (mode == "throw_raw") throw std::runtime_error("raw throw across C entry");
  SolverInfo info{"bad_names_test",
                  "registers bad names on request (tests)",
                  {Device::cpu},
                  {},
                  {OptionSpec::choice("mode", {"a", "b"}, "a choice")}};
  if (mode == "escape") info.name = "bad\n\x1b[2J\x1b[Hname";
  if (mode == "all") info.name = "all";
  if (mode == "escape_description") info.description = "clears \x1b[2J the terminal";
  if (mode == "empty_option") info.options.push_back(OptionSpec::integer("", "1", "empty", 1));
  if (mode == "equals_option") info.options.push_back(OptionSpec::integer("a=b", "1", "eq", 1));
  if (mode == "duplicate_option") info.options.push_back(info.options.front());
  registry.add(info, [info](const OptionValues& options) {
    return std::make_unique<NeverSolves>(info, options);
  });
}

}  // namespace

SINKGRAD_PLUGIN_EXPORT int sinkgrad_plugin_abi_version(void) {
  return SINKGRAD_PLUGIN_ABI_VERSION;
}

SINKGRAD_PLUGIN_EXPORT const char* sinkgrad_plugin_last_error(void) {
  return message().c_str();
}

SINKGRAD_PLUGIN_EXPORT int sinkgrad_plugin_register(SolverRegistry* registry) {
  const char* variable = std::getenv("SINKGRAD_TEST_BAD_NAMES");
  if (variable != nullptr && std::string(variable) == "throw_raw") register_solvers(*registry);
  try {
    register_solvers(*registry);
    return 0;
  } catch (const std::exception& error) {
    message() = error.what();
  }
  return 1;
}
