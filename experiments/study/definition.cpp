#include "experiments/study/definition.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "experiments/study/definition_entries.hpp"

#include "experiments/io/hdf5.hpp"
#include "experiments/study/definition_text.hpp"

namespace sinkgrad::study {
namespace {

// Forward iterations beyond this are refused (a T of 10^6 already takes minutes per run).
constexpr long long max_forward_T = 1000000;

// The fixed sections and keys, each with what it accepts (used in every message).
using KeyTable = std::map<std::string, std::map<std::string, std::string>>;

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
        {"convention", "columns_first, rows_first, tilekernels"},
        {"eps",
         "numbers >= 0 (added to every normalising denominator; default 0, 1e-6 for "
         "tilekernels)"}}},
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

std::string joined(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string where(const std::string& key) {
  return key_label(key);
}

class Reader {
 public:
  Reader(std::string source, std::map<std::string, std::string> entries)
      : source_(std::move(source)), entries_(std::move(entries)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw DefinitionError("definition " + source_ + ": " + where(key) + ": " + message);
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw DefinitionError("definition " + source_ + ": " + message);
  }

  bool has(const std::string& key) const { return entries_.count(key) != 0; }

  std::string raw(const std::string& key) const {
    const auto found = entries_.find(key);
    if (found == entries_.end()) fail(key, "missing; give " + allowed(key));
    return found->second;
  }

  // The comma-separated items of a key; an empty list is refused.
  std::vector<std::string> list(const std::string& key) const {
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

  std::string single(const std::string& key) const {
    const std::vector<std::string> items = list(key);
    if (items.size() != 1)
      fail(key,
           "takes one value, got " + std::to_string(items.size()) + "; allowed: " + allowed(key));
    return items.front();
  }

  long long integer(const std::string& key, const std::string& item, long long minimum) const {
    long long value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size())
      fail(key, "'" + item + "' is not an integer; allowed: " + allowed(key));
    if (value < minimum)
      fail(key,
           "'" + item + "' is below " + std::to_string(minimum) + "; allowed: " + allowed(key));
    return value;
  }

  double real(const std::string& key, const std::string& item) const {
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(value))
      fail(key, "'" + item + "' is not a finite number; allowed: " + allowed(key));
    return value;
  }

  std::vector<long long> integers(const std::string& key, long long minimum) const {
    std::vector<long long> values;
    std::set<long long> seen;
    for (const std::string& item : list(key)) {
      values.push_back(integer(key, item, minimum));
      if (!seen.insert(values.back()).second) fail(key, "'" + item + "' is listed twice");
    }
    return values;
  }

  std::string allowed(const std::string& key) const {
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

  const std::map<std::string, std::string>& entries() const { return entries_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::map<std::string, std::string> entries_;
};

std::string number_text(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// [forward] convention x eps: every convention with every eps listed, or with its own default.
void parse_forwards(const Reader& reader, StudyDefinition& definition) {
  std::vector<std::string> conventions{"columns_first"};
  if (reader.has("forward.convention")) {
    conventions.clear();
    for (const std::string& item : reader.list("forward.convention")) {
      try {
        parse_forward_convention(item);
      } catch (const Error&) {
        reader.fail("forward.convention", "'" + item + "' is not a forward convention; allowed: " +
                                              reader.allowed("forward.convention"));
      }
      if (std::find(conventions.begin(), conventions.end(), item) != conventions.end())
        reader.fail("forward.convention", "'" + item + "' is listed twice");
      conventions.push_back(item);
    }
  }
  std::vector<std::optional<double>> eps_values{std::nullopt};
  if (reader.has("forward.eps")) {
    eps_values.clear();
    for (const std::string& item : reader.list("forward.eps")) {
      const double eps = reader.real("forward.eps", item);
      if (eps < 0)
        reader.fail("forward.eps",
                    "'" + item + "' is negative; allowed: " + reader.allowed("forward.eps"));
      if (std::find(eps_values.begin(), eps_values.end(), std::optional<double>(eps)) !=
          eps_values.end())
        reader.fail("forward.eps", "'" + item + "' is listed twice");
      eps_values.push_back(eps);
    }
  }
  for (const std::string& convention : conventions)
    for (const auto& eps : eps_values)
      definition.forwards.push_back(make_forward_spec(convention, eps));
}

LogitSource parse_logit_source(const Reader& reader, const std::string& key,
                               const std::string& item, const std::string& base_directory) {
  const auto open = item.find('(');
  if (open == std::string::npos || item.back() != ')')
    reader.fail(key, "'" + item + "' is not a distribution; allowed: " + reader.allowed(key));
  const std::string kind = trim(item.substr(0, open));
  const std::vector<std::string> args = split_list(item.substr(open + 1, item.size() - open - 2));
  auto expect_args = [&](std::size_t count, const char* form) {
    if (args.size() != count)
      reader.fail(key, "'" + item + "' takes " + std::to_string(count) + " argument" +
                           (count == 1 ? "" : "s") + ": " + form);
  };
  LogitSource source;
  if (kind == "file") {
    expect_args(2, "file(PATH.h5, DATASET)");
    source.kind = LogitSource::Kind::file;
    source.dataset = args[1];
    const std::filesystem::path given(args[0]);
    source.path = given.is_absolute() || base_directory.empty()
                      ? given.string()
                      : (std::filesystem::path(base_directory) / given).lexically_normal().string();
    source.text = "file(" + args[0] + ", " + args[1] + ")";
    try {
      const h5::File file = h5::File::open(source.path);
      (void)h5::inspect_batch(file, source.dataset);
    } catch (const Error& error) {
      reader.fail(key, "'" + item + "': " + error.what());
    }
    return source;
  }
  std::vector<double> values;
  for (const std::string& arg : args) values.push_back(reader.real(key, arg));
  if (kind == "uniform") {
    expect_args(2, "uniform(low, high) with low < high");
    source.kind = LogitSource::Kind::uniform;
    if (!(values[0] < values[1])) reader.fail(key, "'" + item + "' needs low < high");
  } else if (kind == "normal") {
    expect_args(1, "normal(scale) with scale > 0 (mean 0)");
    source.kind = LogitSource::Kind::normal;
    values.push_back(0);
    if (!(values[0] > 0)) reader.fail(key, "'" + item + "' needs scale > 0");
  } else if (kind == "near_permutation") {
    expect_args(2, "near_permutation(scale, noise) with scale, noise >= 0");
    source.kind = LogitSource::Kind::near_permutation;
    if (values[0] < 0 || values[1] < 0) reader.fail(key, "'" + item + "' needs scale, noise >= 0");
  } else {
    reader.fail(key, "unknown distribution '" + kind + "'; allowed: " + reader.allowed(key));
  }
  source.first = values[0];
  source.second = values[1];
  source.text = kind + "(" + number_text(values[0]) +
                (source.kind == LogitSource::Kind::normal ? "" : ", " + number_text(values[1])) +
                ")";
  return source;
}

// Every key must be a fixed one or an option of a [solver.NAME] section.
void check_keys(const Reader& reader, const SolverRegistry& registry) {
  std::vector<std::string> sections;
  for (const auto& [section, keys] : fixed_keys()) sections.push_back("[" + section + "]");
  sections.push_back("[solver.NAME]");
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

// Every combination of the given option lists, each completed with the solver's defaults.
std::vector<std::map<std::string, std::string>> option_product(const Reader& reader,
                                                               const SolverRegistry& registry,
                                                               const SolverSweep& sweep) {
  std::vector<std::map<std::string, std::string>> sets{{}};
  for (const auto& [option, values] : sweep.option_lists) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& partial : sets)
      for (const std::string& value : values) {
        auto extended = partial;
        extended[option] = value;
        next.push_back(std::move(extended));
      }
    sets = std::move(next);
  }
  std::vector<std::map<std::string, std::string>> resolved;
  for (const auto& given : sets) {
    try {
      resolved.push_back(
          OptionValues::resolve(sweep.name, registry.info(sweep.name).options, given).all());
    } catch (const Error& error) {
      reader.fail("[solver." + sweep.name + "]: " + error.what());
    }
  }
  return resolved;
}

std::vector<SolverSweep> parse_solvers(const Reader& reader, const SolverRegistry& registry) {
  const std::string key = "solvers.use";
  std::vector<std::string> names = reader.list(key);
  if (names.size() == 1 && names.front() == "all") names = registry.names();
  if (std::find(names.begin(), names.end(), "all") != names.end())
    reader.fail(key, "'all' stands alone (use = all); otherwise list solver names: " +
                         joined(registry.names()));
  std::set<std::string> listed;
  for (const std::string& name : names) {
    if (!registry.contains(name))
      reader.fail(key, "unknown solver '" + name +
                           "'; allowed: all, or any of: " + joined(registry.names()));
    if (!listed.insert(name).second) reader.fail(key, "solver '" + name + "' is listed twice");
  }
  for (const auto& [entry, value] : reader.entries())
    if (entry.rfind("solver.", 0) == 0) {
      const std::string solver = entry.substr(7, entry.rfind('.') - 7);
      if (listed.count(solver) == 0)
        reader.fail(entry, "configures solver '" + solver +
                               "', which [solvers] use does not "
                               "list (it lists: " +
                               joined(names) + ")");
    }
  std::vector<SolverSweep> sweeps;
  for (const std::string& name : names) {
    SolverSweep sweep;
    sweep.name = name;
    for (const OptionSpec& spec : registry.info(name).options) {
      const std::string option_key = "solver." + name + "." + spec.name;
      if (!reader.has(option_key)) continue;
      std::vector<std::string> values;
      for (const std::string& value : split_list(reader.raw(option_key))) {
        if (const std::string reason = spec.check(value); !reason.empty())
          reader.fail(option_key, reason + " (option '" + spec.name + "' of solver '" + name +
                                      "': " + spec.description + ")");
        if (std::find(values.begin(), values.end(), value) != values.end())
          reader.fail(option_key, "'" + value + "' is listed twice");
        values.push_back(value);
      }
      if (values.empty())
        reader.fail(option_key,
                    "the list is empty; give at least one value (" + spec.accepted() + ")");
      sweep.option_lists[spec.name] = values;
    }
    sweep.option_sets = option_product(reader, registry, sweep);
    sweeps.push_back(std::move(sweep));
  }
  return sweeps;
}

bool parse_bool(const Reader& reader, const std::string& key) {
  const std::string value = reader.single(key);
  if (value == "true" || value == "1" || value == "yes") return true;
  if (value == "false" || value == "0" || value == "no") return false;
  reader.fail(key, "'" + value + "' is not a boolean; allowed: true, false");
}

}  // namespace

StudyDefinition parse_definition(const std::string& file_text, const std::string& base_directory,
                                 const SolverRegistry& registry, const std::string& source_name,
                                 const std::vector<std::string>& overrides) {
  const std::string source = "'" + source_name + "'";
  // A UTF-8 byte order mark (as some editors write) is not part of the first line.
  const bool bom = file_text.rfind("\xEF\xBB\xBF", 0) == 0;
  const std::string text = bom ? file_text.substr(3) : file_text;
  check_text(text, source);
  std::map<std::string, std::string> entries = read_entries(text, source);
  // Each override is checked on its own first, so that an unknown key names the override.
  for (const std::string& given : overrides) {
    const auto [key, value] = parse_override(given);
    check_keys(Reader(source + " (override '" + given + "')", {{key, value}}), registry);
    entries[key] = value;
  }
  const Reader reader(source, entries);
  check_keys(reader, registry);

  StudyDefinition definition;
  definition.text = text;
  definition.source_path = source_name;
  definition.overrides = overrides;
  definition.entries = std::move(entries);
  if (reader.has("study.name")) definition.name = trim(reader.raw("study.name"));
  if (reader.has("study.description"))
    definition.description = trim(reader.raw("study.description"));

  for (const std::string& item : reader.list("inputs.logits"))
    definition.logits.push_back(parse_logit_source(reader, "inputs.logits", item, base_directory));
  const bool generated = std::any_of(definition.logits.begin(), definition.logits.end(),
                                     [](const LogitSource& s) { return !s.from_file(); });
  if (generated || reader.has("inputs.n"))
    for (const long long n : reader.integers("inputs.n", 1)) {
      if (n > 64)
        reader.fail("inputs.n", "'" + std::to_string(n) + "' is above 64; allowed: " +
                                    reader.allowed("inputs.n") + ", at most 64");
      definition.sizes.push_back(static_cast<int>(n));
    }
  definition.batch = reader.integer("inputs.batch", reader.single("inputs.batch"), 1);
  if (reader.has("inputs.seed"))
    for (const long long seed : reader.integers("inputs.seed", 0))
      definition.seeds.push_back(static_cast<std::uint64_t>(seed));
  else
    definition.seeds.push_back(1);

  for (const long long T : reader.integers("forward.T", 1)) {
    if (T > max_forward_T)
      reader.fail("forward.T", "'" + std::to_string(T) + "' is above " +
                                   std::to_string(max_forward_T) +
                                   "; allowed: " + reader.allowed("forward.T") + ", at most " +
                                   std::to_string(max_forward_T));
    definition.iterations.push_back(static_cast<int>(T));
  }
  if (reader.has("forward.precision")) {
    for (const std::string& item : reader.list("forward.precision")) {
      if (item != "float32" && item != "float64")
        reader.fail("forward.precision", "'" + item + "' is not a precision; allowed: " +
                                             reader.allowed("forward.precision"));
      const Precision precision = parse_precision(item);
      if (std::find(definition.precisions.begin(), definition.precisions.end(), precision) !=
          definition.precisions.end())
        reader.fail("forward.precision", "'" + item + "' is listed twice");
      definition.precisions.push_back(precision);
    }
  } else {
    definition.precisions.push_back(Precision::float64);
  }

  parse_forwards(reader, definition);
  definition.solvers = parse_solvers(reader, registry);
  for (const SolverSweep& sweep : definition.solvers)
    for (const Precision precision : definition.precisions)
      if (!registry.info(sweep.name).supports(precision))
        reader.fail("forward.precision", "solver '" + sweep.name + "' does not support " +
                                             std::string(to_string(precision)));

  if (reader.has("run.devices")) {
    for (const std::string& item : reader.list("run.devices")) {
      if (item != "cpu" && item != "cuda" && item != "default")
        reader.fail("run.devices",
                    "'" + item + "' is not a device; allowed: " + reader.allowed("run.devices"));
      if (std::find(definition.devices.begin(), definition.devices.end(), item) !=
          definition.devices.end())
        reader.fail("run.devices", "'" + item + "' is listed twice");
      definition.devices.push_back(item);
    }
  } else {
    definition.devices.push_back("default");
  }

  if (reader.has("references.converged_tolerance")) {
    const std::string key = "references.converged_tolerance";
    definition.converged_tolerance = reader.real(key, reader.single(key));
    if (!(definition.converged_tolerance > 0))
      reader.fail(key, "must be > 0; allowed: " + reader.allowed(key));
  }
  if (reader.has("references.converged_max_T")) {
    const std::string key = "references.converged_max_T";
    definition.converged_max_iterations = static_cast<int>(
        std::min<long long>(reader.integer(key, reader.single(key), 1), max_forward_T));
  }
  if (reader.has("measure.iterate_errors"))
    definition.iterate_errors = parse_bool(reader, "measure.iterate_errors");
  if (reader.has("measure.timing_repeats")) {
    const std::string key = "measure.timing_repeats";
    definition.timing_repeats = static_cast<int>(reader.integer(key, reader.single(key), 1));
    if (definition.timing_repeats > 1000 || definition.timing_repeats < 1)
      reader.fail(key, "at most 1000; allowed: " + reader.allowed(key));
  }
  return definition;
}

StudyDefinition read_definition(const std::string& path, const SolverRegistry& registry,
                                const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DefinitionError("'" + path + "' is a directory; give a definition file (.ini)");
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw DefinitionError("'" + path + "' is not a regular file; give a definition file (.ini)");
  if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > (16u << 20))
    throw DefinitionError("'" + path + "' is larger than 16 MiB; a definition is a short text");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw DefinitionError("cannot read the definition file '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  const std::string directory = std::filesystem::path(path).parent_path().string();
  return parse_definition(text.str(), directory, registry, path, overrides);
}

}  // namespace sinkgrad::study
