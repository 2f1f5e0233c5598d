// `sinkgrad`: the command-line tool. Dispatches to a subcommand (command_table.cpp); the
// general help lists the commands and the options they all share.

#include <iostream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/common_options.hpp"
#include "cli/text_format.hpp"
#include "cli/version.hpp"

namespace {

using namespace sinkgrad::cli;

void print_general_help(std::ostream& out) {
  out << "Usage: sinkgrad COMMAND [options]\n"
      << "       sinkgrad COMMAND --help    options and details of one command\n"
      << "       sinkgrad --version\n\n"
      << wrap(
             "Backward solvers for Sinkhorn normalisation: compute dL/dM for batches of n x n "
             "matrices and compare the solvers.",
             0)
      << "\nCommands:\n";
  size_t width = 0;
  for (const Command& command : command_table()) width = std::max(width, command.name.size());
  for (const Command& command : command_table())
    out << hanging(command.name, command.summary, static_cast<int>(width) + 6);
  out << "\n"
      << common_options_description() << "\n"
      << wrap(
             "Exit codes: 0 success; 1 the work failed (unreadable or invalid input, I/O "
             "error); 2 the command line is wrong (unknown command, option, solver or value).",
             0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_general_help(std::cerr);
    return exit_usage;
  }
  const std::string& first = args.front();
  if (first == "--help" || first == "-h" || first == "help") {
    print_general_help(std::cout);
    return exit_ok;
  }
  if (first == "--version") {
    std::cout << "sinkgrad " << version << "\n";
    return exit_ok;
  }
  const Command* command = find_command(first);
  if (command == nullptr) {
    std::string known;
    for (const Command& c : command_table()) known += (known.empty() ? "" : ", ") + c.name;
    std::cerr << "sinkgrad: error: unknown command '" << first << "' (commands: " << known
              << "; see 'sinkgrad --help')\n";
    return exit_usage;
  }
  return run_command(*command, std::vector<std::string>(args.begin() + 1, args.end()));
}
