#include "experiments/study/definition_sections.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "experiments/study/definition_entries.hpp"
#include "io/hdf5.hpp"

namespace sinkgrad::study::definition_parsing {
namespace {

std::string number_text(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
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

}  // namespace

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
      // Checked before the dataset is opened, which may follow a link into another file.
      source.linked = h5::linked_files(file, {source.dataset});
      const h5::BatchInfo info = h5::inspect_batch(file, source.dataset);
      if (info.batch == 0)
        throw Error("the dataset holds no matrices (shape (0, " + std::to_string(info.n) + ", " +
                    std::to_string(info.n) + "))");
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

}  // namespace sinkgrad::study::definition_parsing
