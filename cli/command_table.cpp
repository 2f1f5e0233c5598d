// The table of subcommands: one line per command, in the order `sinkgrad --help` lists them.
// Each X(name) expects `Command make_<name>_command()` in <name>_command.cpp.

#include "cli/command.hpp"

#define SINKGRAD_CLI_COMMANDS(X) \
  X(solvers)                     \
  X(grad)                        \
  X(demo)                        \
  X(run)                         \
  X(summary)

namespace sinkgrad::cli {

#define SINKGRAD_DECLARE_COMMAND(name) Command make_##name##_command();
SINKGRAD_CLI_COMMANDS(SINKGRAD_DECLARE_COMMAND)
#undef SINKGRAD_DECLARE_COMMAND

const std::vector<Command>& command_table() {
#define SINKGRAD_LIST_COMMAND(name) make_##name##_command(),
  static const std::vector<Command> table{SINKGRAD_CLI_COMMANDS(SINKGRAD_LIST_COMMAND)};
#undef SINKGRAD_LIST_COMMAND
  return table;
}

const Command* find_command(const std::string& name) {
  for (const Command& command : command_table())
    if (command.name == name) return &command;
  return nullptr;
}

}  // namespace sinkgrad::cli
