// `sinkgrad solvers`: what SolverRegistry::global() holds, with every option's default,
// accepted values and meaning.

#include <iostream>

#include "cli/command.hpp"
#include "cli/text_format.hpp"
#include "core/solver_registry.hpp"

namespace sinkgrad::cli {
namespace {

template <class T>
std::string joined(const std::vector<T>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + std::string(to_string(item));
  return text;
}

void print_solver(const SolverInfo& info) {
  std::cout << info.name << "\n" << wrap(info.description, 4);
  std::cout << "    devices: " << joined(info.devices)
            << "; precisions: " << joined(info.precisions) << "; needs the logits: "
            << (info.needs_logits        ? "yes (replays the forward)"
                : info.log_base_gradient ? "for tilekernels (eps > 0) and mhc_triton"
                                         : "no")
            << "\n";
  if (info.options.empty()) {
    std::cout << "    options: none\n\n";
    return;
  }
  std::cout << "    options (--option key=value):\n";
  for (const OptionSpec& option : info.options) {
    std::cout << "      " << option.name << " (default " << option.default_value << "; "
              << option.accepted() << ")\n"
              << wrap(option.description, 8);
  }
  std::cout << "\n";
}

int run_solvers(const po::variables_map& values) {
  const SolverRegistry& registry = SolverRegistry::global();
  if (values.count("names")) {
    for (const std::string& name : registry.names()) std::cout << name << "\n";
    return exit_ok;
  }
  for (const std::string& name : registry.names()) print_solver(registry.info(name));
  return exit_ok;
}

}  // namespace

Command make_solvers_command() {
  Command command;
  command.name = "solvers";
  command.summary = "List the backward solvers: devices, precisions and options with defaults.";
  command.usage = "[--names]";
  command.description =
      "Options are passed to 'sinkgrad grad' as --option key=value, once per option; 'auto' "
      "lets the solver pick a value from n and the precision.";
  command.add_options = [](po::options_description& options) {
    options.add_options()("names", "print only the solver names, one per line");
  };
  command.run = run_solvers;
  return command;
}

}  // namespace sinkgrad::cli
