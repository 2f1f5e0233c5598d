#include "core/solver_names.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/error.hpp"

namespace sinkgrad {
namespace {

constexpr std::size_t max_name_length = 64;

std::string escaped(const std::string& name, bool keep_blanks) {
  std::string text;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte > 0x20 || (keep_blanks && byte == 0x20)) && byte < 0x7f &&
        (keep_blanks || c != '\\')) {
      text += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", byte);
      text += hex;
    }
  }
  return text;
}

// 'text', appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "'" + string.
std::string quoted(const std::string& text) {
  std::string result = "'";
  result.append(text).append("'");
  return result;
}

}  // namespace

std::string name_problem(const std::string& name, bool option) {
  if (name.empty()) return "it is empty";
  if (name.size() > max_name_length)
    return "it is longer than " + std::to_string(max_name_length) + " characters";
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f)
      return "it holds a blank, a control character or a byte that is not ASCII";
    const std::string separators = option ? "=,/\\:;#'\"()[]." : "=,/\\:;#'\"()[]";
    if (separators.find(c) != std::string::npos)
      return std::string("it holds '") + c + "', a separator of command lines and definitions";
  }
  if (!option && name == "all") return "'all' is reserved (use = all means every solver)";
  return {};
}

std::string visible_name(const std::string& name) {
  return escaped(name, false);
}

std::string visible_text(const std::string& text) {
  return escaped(text, true);
}

void check_solver_info(const SolverInfo& info) {
  const std::string solver = quoted(visible_name(info.name));
  if (const std::string why = name_problem(info.name, false); !why.empty())
    throw Error("solver name " + solver + " is not allowed: " + why +
                " (a name is 1 to 64 printable ASCII characters without blanks or separators)");
  // Descriptions are printed by `sinkgrad solvers` and --help: no escape sequences either.
  const auto check_text = [&](const std::string& text, const std::string& what) {
    for (const char c : text)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw Error(what + " of solver " + solver + " holds a control character (" +
                    visible_name(std::string(1, c)) + ")");
  };
  check_text(info.description, "the description");
  std::set<std::string> seen;
  for (const OptionSpec& spec : info.options) {
    const std::string option = "option " + quoted(visible_name(spec.name)) + " of solver " + solver;
    if (const std::string why = name_problem(spec.name, true); !why.empty())
      throw Error(option + " is not allowed: " + why +
                  " (an option name is 1 to 64 printable ASCII characters without blanks, "
                  "dots or separators)");
    if (!seen.insert(spec.name).second) throw Error(option + " is declared twice");
    check_text(spec.description, "the description of option " + quoted(spec.name));
    if (spec.kind != OptionSpec::Kind::choice && !(spec.minimum <= spec.maximum))
      throw Error(option + " has a minimum above its maximum");
    // Choices are printed and split from lists like names; a dot is fine in a value.
    for (const std::string& choice : spec.choices) {
      std::string probe = choice;
      std::replace(probe.begin(), probe.end(), '.', '_');
      if (const std::string why = name_problem(probe, true); !why.empty())
        throw Error(option + " has a choice " + quoted(visible_name(choice)) +
                    " that is refused: " + why);
    }
    if (const std::string why = spec.check(spec.default_value); !why.empty())
      throw Error(option + ": its default is refused by its own check: " + visible_text(why));
  }
}

}  // namespace sinkgrad
