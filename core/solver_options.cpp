#include "core/solver_options.hpp"

#include <charconv>
#include <climits>
#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace sinkgrad {
namespace {

bool parse_integer(const std::string& text, long long& value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

bool parse_real(const std::string& text, double& value) {
  if (text.empty()) return false;
  std::istringstream stream(text);
  stream >> value;
  return !stream.fail() && stream.eof() && std::isfinite(value);
}

// 1000000 rather than 1e+06: integer bounds are read by people typing integers.
std::string format_bound(double bound) {
  if (std::abs(bound) < 1e15 && bound == std::floor(bound))
    return std::to_string(static_cast<long long>(bound));
  std::ostringstream out;
  out << bound;
  return out.str();
}

}  // namespace

OptionSpec OptionSpec::integer(std::string name, std::string default_value, std::string description,
                               double minimum, bool allows_auto, double maximum) {
  return {
      std::move(name), Kind::integer, std::move(default_value), std::move(description), {}, minimum,
      allows_auto,     maximum};
}

OptionSpec OptionSpec::real(std::string name, std::string default_value, std::string description,
                            double minimum, bool allows_auto, double maximum) {
  return {
      std::move(name), Kind::real, std::move(default_value), std::move(description), {}, minimum,
      allows_auto,     maximum};
}

OptionSpec OptionSpec::choice(std::string name, std::vector<std::string> choices,
                              std::string description) {
  std::string first = choices.empty() ? std::string() : choices.front();
  return {std::move(name),
          Kind::choice,
          std::move(first),
          std::move(description),
          std::move(choices),
          0,
          false,
          0};
}

std::string OptionSpec::accepted() const {
  std::string text;
  switch (kind) {
    case Kind::integer:
      text = "an integer from " + format_bound(minimum) + " to " + format_bound(maximum);
      break;
    case Kind::real:
      text = maximum == limits::max_real
                 ? "a number >= " + format_bound(minimum) + " (finite in float32)"
                 : "a number from " + format_bound(minimum) + " to " + format_bound(maximum);
      break;
    case Kind::choice:
      text = "one of:";
      for (size_t k = 0; k < choices.size(); ++k) text += (k ? ", " : " ") + choices[k];
      break;
  }
  if (allows_auto) text += " or auto";
  return text;
}

std::string OptionSpec::check(const std::string& value) const {
  if (allows_auto && value == "auto") return {};
  switch (kind) {
    case Kind::integer: {
      long long parsed = 0;
      // from_chars refuses what overflows a long long: the value is never wrapped.
      if (parse_integer(value, parsed) && static_cast<double>(parsed) >= minimum &&
          static_cast<double>(parsed) <= maximum)
        return {};
      break;
    }
    case Kind::real: {
      double parsed = 0;
      if (parse_real(value, parsed) && parsed >= minimum && parsed <= maximum) return {};
      break;
    }
    case Kind::choice:
      for (const auto& c : choices)
        if (c == value) return {};
      break;
  }
  return "'" + value + "' is not " + accepted();
}

OptionValues OptionValues::resolve(const std::string& solver_name,
                                   const std::vector<OptionSpec>& specs,
                                   const std::map<std::string, std::string>& given) {
  OptionValues values;
  for (const auto& spec : specs) values.values_[spec.name] = spec.default_value;
  for (const auto& [key, value] : given) {
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == key) spec = &s;
    if (spec == nullptr) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      throw Error("solver '" + solver_name + "' has no option '" + key + "'" +
                  (known.empty() ? std::string(" (it takes no options)")
                                 : " (its options: " + known + ")"));
    }
    if (const std::string reason = spec->check(value); !reason.empty())
      throw Error("option " + key + " of solver '" + solver_name + "': " + reason);
    values.values_[key] = value;
  }
  return values;
}

const std::string& OptionValues::text(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) throw Error("no option '" + name + "'");
  return it->second;
}

long long OptionValues::integer(const std::string& name) const {
  long long value = 0;
  if (!parse_integer(text(name), value))
    throw Error("option " + name + " = '" + text(name) + "' is not an integer");
  return value;
}

int OptionValues::integer_as_int(const std::string& name) const {
  const long long value = integer(name);
  if (value < INT_MIN || value > INT_MAX)
    throw Error("option " + name + " = " + std::to_string(value) + " does not fit an int");
  return static_cast<int>(value);
}

double OptionValues::real(const std::string& name) const {
  double value = 0;
  if (!parse_real(text(name), value))
    throw Error("option " + name + " = '" + text(name) + "' is not a number");
  return value;
}

std::pair<std::string, std::string> parse_key_value(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("option '" + text + "' is not of the form key=value");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace sinkgrad
