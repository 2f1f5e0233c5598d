#include "experiments/study/definition_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/forward_spec.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/definition_entries.hpp"

namespace sinkgrad::study::definition_parsing {
namespace {

std::string where(const std::string& key) {
  return key_label(key);
}

}  // namespace

const KeyTable& fixed_keys() {
  static const KeyTable keys{
      {"study", {{"name", "a short name (text)"}, {"description", "one line of text"}}},
      {"inputs",
       {{"n", "integers >= 1 (matrix sizes), e.g. 4, 8, 16"},
        {"batch", "one integer >= 1 (matrices per input)"},
        {"logits",
         "uniform(low, high), normal(scale), near_permutation(scale, noise), "
         "file(PATH.h5, DATASET)"},
        {"seed", "integers >= 0"}}},
      {"forward",
       {{"T", "integers >= 1 (forward iterations)"},
        {"precision", "float32, float64"},
        {"convention", forward_convention_names()},
        {"eps",
         "numbers >= 0 (the eps of every normalising denominator; default: the convention's "
         "own)"}}},
      {"solvers", {{"use", "all, or solver names"}}},
      {"run", {{"devices", "cpu, cuda, default (cuda when a GPU is usable, else cpu)"}}},
      {"references",
       {{"converged_tolerance", "one number > 0 (max |c - 1| of the converged forward)"},
        {"converged_max_T", "one integer >= 1 (cap on the converged forward's iterations)"}}},
      {"measure",
       {{"iterate_errors", "true or false (gradient error of every CG iterate)"},
        {"timing_repeats", "one integer >= 1 (solves timed per run; the median is reported)"}}},
  };
  return keys;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

void Reader::fail(const std::string& key, const std::string& message) const {
  throw DefinitionError("definition " + source_ + ": " + where(key) + ": " + message);
}

void Reader::fail(const std::string& message) const {
  throw DefinitionError("definition " + source_ + ": " + message);
}

std::string Reader::raw(const std::string& key) const {
  const auto found = entries_.find(key);
  if (found == entries_.end()) fail(key, "missing; give " + allowed(key));
  return found->second;
}

std::vector<std::string> Reader::list(const std::string& key) const {
  const std::string text = raw(key);
  int depth = 0;
  for (const char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) break;
  }
  if (depth != 0) fail(key, "unbalanced parentheses in '" + text + "' (each '(' needs its ')')");
  std::vector<std::string> items = split_list(text);
  if (items.empty()) fail(key, "the list is empty; give at least one of: " + allowed(key));
  for (const std::string& item : items)
    if (item.empty()) fail(key, "an item of the list is empty; allowed: " + allowed(key));
  return items;
}

std::string Reader::single(const std::string& key) const {
  const std::vector<std::string> items = list(key);
  if (items.size() != 1)
    fail(key,
         "takes one value, got " + std::to_string(items.size()) + "; allowed: " + allowed(key));
  return items.front();
}

long long Reader::integer(const std::string& key, const std::string& item,
                          long long minimum) const {
  long long value = 0;
  const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (error == std::errc::result_out_of_range && end == item.data() + item.size())
    fail(key, "'" + item +
                  "' is beyond the largest integer a definition holds (2^63 - 1); "
                  "allowed: " +
                  allowed(key));
  if (error != std::errc() || end != item.data() + item.size())
    fail(key, "'" + item + "' is not an integer; allowed: " + allowed(key));
  if (value < minimum)
    fail(key, "'" + item + "' is below " + std::to_string(minimum) + "; allowed: " + allowed(key));
  return value;
}

double Reader::real(const std::string& key, const std::string& item) const {
  char* end = nullptr;
  const double value = std::strtod(item.c_str(), &end);
  if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(value))
    fail(key, "'" + item + "' is not a finite number; allowed: " + allowed(key));
  return value;
}

std::vector<long long> Reader::integers(const std::string& key, long long minimum) const {
  std::vector<long long> values;
  std::set<long long> seen;
  for (const std::string& item : list(key)) {
    values.push_back(integer(key, item, minimum));
    if (!seen.insert(values.back()).second) fail(key, "'" + item + "' is listed twice");
  }
  return values;
}

std::string Reader::allowed(const std::string& key) const {
  const auto dot = key.rfind('.');
  if (dot != std::string::npos) {
    const auto section = fixed_keys().find(key.substr(0, dot));
    if (section != fixed_keys().end()) {
      const auto entry = section->second.find(key.substr(dot + 1));
      if (entry != section->second.end()) return entry->second;
    }
  }
  return "see docs/experiments.md";
}

namespace {

std::vector<std::string> section_names() {
  std::vector<std::string> sections;
  for (const auto& [section, keys] : fixed_keys()) sections.push_back("[" + section + "]");
  sections.push_back("[solver.NAME]");
  return sections;
}

}  // namespace

void check_section(const Reader& reader, const SolverRegistry& registry,
                   const std::string& section) {
  if (section.rfind("solver.", 0) == 0) {
    const std::string solver = section.substr(7);
    if (!registry.contains(solver))
      reader.fail("[" + section + "]: unknown solver '" + solver +
                  "'; solvers: " + joined(registry.names()));
    return;
  }
  if (fixed_keys().count(section) == 0)
    reader.fail("unknown section [" + section + "]; sections: " + joined(section_names()));
}

// Every key must be a fixed one or an option of a [solver.NAME] section.
void check_keys(const Reader& reader, const SolverRegistry& registry) {
  const std::vector<std::string> sections = section_names();
  for (const auto& [key, value] : reader.entries()) {
    const auto dot = key.rfind('.');
    if (dot == std::string::npos)
      reader.fail("key '" + key + "' is outside any section; sections: " + joined(sections));
    const std::string section = key.substr(0, dot);
    const std::string name = key.substr(dot + 1);
    if (section.rfind("solver.", 0) == 0) {
      const std::string solver = section.substr(7);
      if (!registry.contains(solver))
        reader.fail(key, "unknown solver '" + solver + "'; solvers: " + joined(registry.names()));
      std::vector<std::string> options;
      for (const OptionSpec& spec : registry.info(solver).options) options.push_back(spec.name);
      if (std::find(options.begin(), options.end(), name) == options.end())
        reader.fail(key, "unknown option '" + name + "' of solver '" + solver + "'; its options: " +
                             (options.empty() ? std::string("none") : joined(options)));
      continue;
    }
    const auto fixed = fixed_keys().find(section);
    if (fixed == fixed_keys().end())
      reader.fail(key, "unknown section [" + section + "]; sections: " + joined(sections));
    if (fixed->second.count(name) == 0) {
      std::vector<std::string> names;
      for (const auto& [known, allowed] : fixed->second) names.push_back(known);
      reader.fail(
          key, "unknown key '" + name + "' in [" + section + "]; allowed keys: " + joined(names));
    }
  }
}

}  // namespace sinkgrad::study::definition_parsing
