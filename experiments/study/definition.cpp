#include "experiments/study/definition.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/limits.hpp"
#include "experiments/study/definition_entries.hpp"
#include "experiments/study/definition_reader.hpp"
#include "experiments/study/definition_sections.hpp"
#include "experiments/study/definition_text.hpp"

namespace sinkgrad::study {

using namespace definition_parsing;

StudyDefinition parse_definition(const std::string& file_text, const std::string& base_directory,
                                 const SolverRegistry& registry, const std::string& source_name,
                                 const std::vector<std::string>& overrides) {
  const std::string source = "'" + source_name + "'";
  // A UTF-8 byte order mark (as some editors write) is not part of the first line.
  const bool bom = file_text.rfind("\xEF\xBB\xBF", 0) == 0;
  const std::string text = bom ? file_text.substr(3) : file_text;
  check_text(text, source);
  std::map<std::string, std::string> entries = read_entries(text, source);
  // Each override is checked on its own first, so that an unknown key names the override; a
  // key given twice on the command line is refused as in a file.
  std::set<std::string> overridden;
  for (const std::string& given : overrides) {
    check_override_text(given, source);
    const auto [key, value] = parse_override(given);
    if (!overridden.insert(key).second)
      throw DefinitionError("definition " + source + ": override '" + given +
                            "': " + key_label(key) +
                            " is given twice on the command line; give each key once (a list "
                            "is comma-separated)");
    check_keys(Reader(source + " (override '" + given + "')", {{key, value}}), registry);
    entries[key] = value;
  }
  const Reader reader(source, entries);
  check_keys(reader, registry);
  for (const std::string& section : section_headers(text)) check_section(reader, registry, section);

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
  try {
    for (const int n : definition.sizes.empty() ? std::vector<int>{1} : definition.sizes)
      limits::check_batch_shape(definition.batch, n);
  } catch (const Error& error) {
    reader.fail("inputs.batch", error.what());
  }
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
    // Checked as the long long it was read as: a cast first would turn 2^32 + 1 into 1.
    const long long repeats = reader.integer(key, reader.single(key), 1);
    if (repeats > 1000)
      reader.fail(key, "'" + std::to_string(repeats) +
                           "' is above 1000; allowed: " + reader.allowed(key) + ", at most 1000");
    definition.timing_repeats = static_cast<int>(repeats);
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
