// Parsing and help for one command: its own options plus the common ones, `--help`, and the
// translation of errors into messages and exit codes.

#include <array>
#include <iostream>

#include "cli/command.hpp"
#include "cli/common_options.hpp"
#include "cli/text_format.hpp"

namespace sinkgrad::cli {
namespace {

void print_help(const Command& command, const po::options_description& own,
                const po::options_description& common) {
  // The usage line wraps with its continuation lines indented under the command.
  std::string usage = wrap("Usage: sinkgrad " + command.name + " " + command.usage, 4);
  usage.erase(0, 4);
  std::cout << usage << "\n" << wrap(command.summary, 0) << "\n";
  if (!own.options().empty()) std::cout << own << "\n";
  std::cout << common << "\n";
  if (!command.description.empty()) std::cout << wrap(command.description, 0);
}

// Every message is one line (the docs promise it; scripts read the last line): line breaks
// from a wrapped library message become "; ", other control characters '?'.
std::string one_line(const char* what) {
  std::string text;
  for (const char* c = what; *c != '\0'; ++c) {
    if (*c == '\n' || *c == '\r') {
      if (!text.empty() && text.back() != ' ') text += "; ";
    } else {
      text += static_cast<unsigned char>(*c) < 0x20 ? '?' : *c;
    }
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == ';')) text.pop_back();
  return text;
}

}  // namespace

int run_command(const Command& command, const std::vector<std::string>& args) {
  const std::string prefix = "sinkgrad " + command.name + ": ";
  try {
    po::options_description own("Options of '" + command.name + "'", 100, 50);
    if (command.add_options) command.add_options(own);
    const po::options_description common = common_options_description();
    po::options_description all;
    all.add(own).add(common);

    po::variables_map values;
    po::positional_options_description positional;
    for (const std::string& name : command.positional) positional.add(name.c_str(), 1);
    if (!command.positional_rest.empty()) positional.add(command.positional_rest.c_str(), -1);
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
    // --help is honoured before the checks for required options and values.
    if (values.count("help")) {
      print_help(command, own, common);
      return exit_ok;
    }
    po::notify(values);
    apply_common_options(read_common_options(values));
    return command.run(values);
  } catch (const po::required_option& error) {
    // A missing positional argument is named as the usage line shows it, not as its --option.
    std::string message = one_line(error.what());
    constexpr std::array<const char*, 4> ordinal{"first", "second", "third", "fourth"};
    for (std::size_t k = 0; k < command.positional.size() && k < 4; ++k)
      if (const std::string& name = command.positional[k]; error.get_option_name() == "--" + name) {
        po::options_description own;
        if (command.add_options) command.add_options(own);
        const po::option_description* option = own.find_nothrow(name, false);
        const std::string shown = option != nullptr ? option->semantic()->name() : name;
        message = "missing " + shown + " (the " + ordinal[k] + " argument, or --" + name + " " +
                  shown + ")";
      }
    std::cerr << prefix << "error: " << message << " (see 'sinkgrad " << command.name
              << " --help')\n";
    return exit_usage;
  } catch (const po::error& error) {
    std::cerr << prefix << "error: " << one_line(error.what()) << " (see 'sinkgrad " << command.name
              << " --help')\n";
    return exit_usage;
  } catch (const UsageError& error) {
    std::cerr << prefix << "error: " << one_line(error.what()) << " (see 'sinkgrad " << command.name
              << " --help')\n";
    return exit_usage;
  } catch (const Error& error) {
    std::cerr << prefix << "error: " << one_line(error.what()) << "\n";
    return exit_failure;
  } catch (const std::bad_alloc&) {
    // Large allocations are estimated first (memory_budget.hpp); this is one that was not.
    std::cerr << prefix
              << "error: out of memory (an allocation failed; use a smaller batch or fewer "
                 "--threads)\n";
    return exit_failure;
  } catch (const std::exception& error) {
    std::cerr << prefix << "internal error: " << one_line(error.what()) << "\n";
    return exit_failure;
  } catch (...) {
    // A plugin may throw anything; the command still ends with a message and exit code 1.
    std::cerr << prefix << "internal error: an exception that is not a std::exception\n";
    return exit_failure;
  }
}

}  // namespace sinkgrad::cli
