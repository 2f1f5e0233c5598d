#pragma once
// Options of a solver: declared once with defaults and validation (what `sinkgrad solvers`
// prints), given as key=value pairs, checked before anything is computed.

#include <map>
#include <string>
#include <vector>

#include "core/limits.hpp"

namespace sinkgrad {

struct OptionSpec {
  enum class Kind { integer, real, choice };
  std::string name;
  Kind kind = Kind::integer;
  std::string default_value;  // as text; "auto" where allows_auto
  std::string description;
  std::vector<std::string> choices;  // for Kind::choice
  double minimum = 0;                // for integer and real (inclusive)
  bool allows_auto = false;          // "auto": the solver picks a value from n and precision
  // For integer and real (inclusive): every value is bounded, so that no option makes a call
  // endless or overflows where the solver converts it (an int, the solve's precision).
  double maximum = limits::max_real;

  // maximum: at most limits::max_option_integer unless the solver says more (up to 2^53).
  static OptionSpec integer(std::string name, std::string default_value, std::string description,
                            double minimum, bool allows_auto = false,
                            double maximum = double(limits::max_option_integer));
  static OptionSpec real(std::string name, std::string default_value, std::string description,
                         double minimum, bool allows_auto = false,
                         double maximum = limits::max_real);
  static OptionSpec choice(std::string name, std::vector<std::string> choices,
                           std::string description);

  // What the option accepts, in words ("integer >= 1 or auto", "one of: schur, block").
  std::string accepted() const;
  // Empty when value is acceptable, otherwise the reason.
  std::string check(const std::string& value) const;
};

// Validated option values: every declared option has a value (given or default).
class OptionValues {
 public:
  // Throws Error naming the offending key and what is allowed.
  static OptionValues resolve(const std::string& solver_name, const std::vector<OptionSpec>& specs,
                              const std::map<std::string, std::string>& given);

  const std::string& text(const std::string& name) const;
  bool is_auto(const std::string& name) const { return text(name) == "auto"; }
  long long integer(const std::string& name) const;
  // An integer option as an int; an Error (not a wrapped value) when it does not fit.
  int integer_as_int(const std::string& name) const;
  double real(const std::string& name) const;
  const std::map<std::string, std::string>& all() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Parses "key=value" (for --option); throws Error on a missing '='.
std::pair<std::string, std::string> parse_key_value(const std::string& text);

}  // namespace sinkgrad
