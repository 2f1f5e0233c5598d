#pragma once
// A subcommand of the `sinkgrad` tool: its name, its help text, its own options and what it
// does. The options every command shares (--help, --threads, ...) are not declared here but in
// common_options.hpp, and the list of commands is in command_table.cpp.
//
// Adding a command: write <name>_command.cpp defining `Command make_<name>_command()` and add
// one line X(<name>) to the table in command_table.cpp (CMake picks up *_command.cpp).

#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace sinkgrad::cli {

namespace po = boost::program_options;

// Exit codes of every command (documented in docs/cli.md).
enum ExitCode : int {
  exit_ok = 0,
  exit_failure = 1,  // the command line was fine, but the work failed (input files, I/O, ...)
  exit_usage = 2,    // the command line is wrong (unknown option, bad value, unknown solver)
};

// A mistake in the command line: reported with a pointer to `--help`, exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

struct Command {
  std::string name;
  std::string summary;      // one line, for `sinkgrad --help`
  std::string usage;        // e.g. "--input IN.h5 --output OUT.h5 --solver NAME [options]"
  std::string description;  // paragraphs printed by `sinkgrad NAME --help` after the options
  // Declares the command's own options.
  std::function<void(po::options_description&)> add_options;
  // Options that may also be given as bare positional arguments, in order (each once), e.g.
  // {"definition"} for `sinkgrad run DEFINITION.ini`.
  std::vector<std::string> positional;
  // An option that takes every positional argument after those (e.g. the overrides of
  // `sinkgrad run DEFINITION.ini inputs.n=4`); empty: none.
  std::string positional_rest;
  // Does the work with the parsed options and returns the exit code; throws UsageError for a
  // bad command line and sinkgrad::Error for a failure.
  std::function<int(const po::variables_map&)> run;
};

// The commands in the order `sinkgrad --help` lists them (command_table.cpp).
const std::vector<Command>& command_table();
const Command* find_command(const std::string& name);

// Parses args (everything after the command name) with the command's and the common options,
// prints `--help` or runs the command; returns the exit code. Errors are reported on stderr.
int run_command(const Command& command, const std::vector<std::string>& args);

}  // namespace sinkgrad::cli
