#include "experiments/study/definition_entries.hpp"

#include <boost/program_options.hpp>
#include <set>
#include <sstream>

#include "experiments/study/definition.hpp"

namespace sinkgrad::study {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (const char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!trim(current).empty() || !items.empty()) items.push_back(trim(current));
  return items;
}

std::string key_label(const std::string& key) {
  const auto dot = key.rfind('.');
  if (dot == std::string::npos) return "key '" + key + "' (outside any section)";
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "[" + substr(...).
  std::string label = "[";
  label.append(key, 0, dot).append("] ").append(key, dot + 1);
  return label;
}

Entries read_entries(const std::string& text, const std::string& source) {
  namespace po = boost::program_options;
  Entries entries;
  try {
    std::istringstream stream(text);
    const po::options_description none;
    const po::parsed_options parsed = po::parse_config_file(stream, none, true);
    for (const po::option& option : parsed.options) {
      const std::string value = option.value.empty() ? "" : option.value.front();
      if (!entries.emplace(option.string_key, value).second)
        throw DefinitionError("definition " + source + ": " + key_label(option.string_key) +
                              ": given twice; give each key once (a list is comma-separated)");
    }
  } catch (const po::error& error) {
    throw DefinitionError("definition " + source + ": syntax error: " + error.what() +
                          " (the format is INI: '[section]' lines and 'key = value' lines)");
  }
  return entries;
}

std::vector<std::string> section_headers(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    line = trim(line.substr(0, line.find('#')));
    if (line.size() >= 2 && line.front() == '[' && line.back() == ']')
      names.push_back(trim(line.substr(1, line.size() - 2)));
  }
  return names;
}

std::pair<std::string, std::string> parse_override(const std::string& text) {
  const auto equals = text.find('=');
  const std::string key = equals == std::string::npos ? "" : trim(text.substr(0, equals));
  const auto dot = key.rfind('.');
  if (key.empty() || dot == std::string::npos || dot == 0 || dot + 1 == key.size() ||
      key.find_first_of(" \t[]#;=") != std::string::npos)
    throw DefinitionError("override '" + text +
                          "' is not section.key=value (e.g. inputs.n=4 or "
                          "solver.cg_corrected.max_iterations=8,16)");
  const std::string value = trim(text.substr(equals + 1));
  // The log stores the definition after the overrides as INI text, and --resume reads it back:
  // an override must therefore mean the same as the line "key = value" of a file (a '#'
  // there starts a comment), or the stored definition would never match again.
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "[" + substr(...).
  std::string line = "[";
  line.append(key, 0, dot).append("]\n").append(key, dot + 1).append(" = ").append(value);
  line += '\n';
  Entries read;
  try {
    read = read_entries(line, "override");
  } catch (const DefinitionError&) {
  }
  const auto found = read.find(key);
  if (read.size() != 1 || found == read.end() || trim(found->second) != value)
    throw DefinitionError("override '" + text + "' does not read back as the definition line '" +
                          key.substr(dot + 1) + " = " + value +
                          "' (a '#' starts a comment there); give a value a file could hold");
  return {key, value};
}

std::string canonical_value(const std::string& value) {
  std::string joined;
  for (const std::string& item : split_list(value)) {
    // Blanks next to brackets and commas carry no meaning; other blanks (in paths) count once.
    std::string compact;
    for (std::size_t i = 0; i < item.size(); ++i) {
      const char c = item[i];
      if (c != ' ' && c != '\t') {
        compact += c;
        if (c == ',') compact += ' ';
        continue;
      }
      const auto next = item.find_first_not_of(" \t", i);
      if (compact.empty() || compact.back() == '(' || compact.back() == ' ' ||
          next == std::string::npos || item[next] == ',' || item[next] == '(' || item[next] == ')')
        continue;
      compact += ' ';
    }
    joined += (joined.empty() ? "" : ", ") + compact;
  }
  return joined;
}

Entries canonical_entries(const Entries& entries) {
  Entries canonical;
  for (const auto& [key, value] : entries) canonical[key] = canonical_value(value);
  return canonical;
}

std::string canonical_text(const Entries& entries) {
  std::string text, section;
  for (const auto& [key, value] : canonical_entries(entries)) {
    const auto dot = key.rfind('.');
    const std::string key_section = dot == std::string::npos ? "" : key.substr(0, dot);
    if (key_section != section || text.empty()) {
      if (!key_section.empty()) text += "[" + key_section + "]\n";
      section = key_section;
    }
    text += key.substr(dot == std::string::npos ? 0 : dot + 1) + " = " + value + "\n";
  }
  return text;
}

std::string first_difference(const Entries& logged, const Entries& current) {
  const Entries a = canonical_entries(logged), b = canonical_entries(current);
  const auto shown = [](const Entries& entries, const std::string& key) {
    const auto found = entries.find(key);
    return found == entries.end() ? std::string("not given") : "'" + found->second + "'";
  };
  auto left = a.begin();
  auto right = b.begin();
  while (left != a.end() || right != b.end()) {
    std::string key;
    if (right == b.end() || (left != a.end() && left->first < right->first))
      key = (left++)->first;
    else if (left == a.end() || right->first < left->first)
      key = (right++)->first;
    else if (left->second != right->second)
      key = left->first;
    else {
      ++left;
      ++right;
      continue;
    }
    return key_label(key) + ": " + shown(a, key) + " in the log, " + shown(b, key) + " now";
  }
  return "";
}

bool is_sweep_key(const std::string& key) {
  static const std::set<std::string> lists = {
      "inputs.n",           "inputs.logits", "inputs.seed", "forward.T",  "forward.precision",
      "forward.convention", "forward.eps",   "solvers.use", "run.devices"};
  return key.rfind("solver.", 0) == 0 || lists.count(key) != 0;
}

std::string resume_difference(const Entries& logged, const Entries& current) {
  const Entries a = canonical_entries(logged), b = canonical_entries(current);
  for (const auto& [key, value] : a) {
    const auto now = b.find(key);
    // A key given on one side only is a changed setting (its default is not known here).
    if (now == b.end()) return key_label(key) + ": '" + value + "' in the log, not given now";
    if (now->second == value) continue;
    const std::string both =
        key_label(key) + ": '" + value + "' in the log, '" + now->second + "' now";
    if (!is_sweep_key(key)) return both + " (a fixed setting)";
    const std::vector<std::string> items = split_list(now->second);
    const std::set<std::string> wide(items.begin(), items.end());
    std::string missing;
    for (const std::string& item : split_list(value))
      if (wide.count(item) == 0) missing += (missing.empty() ? "" : ", ") + item;
    if (!missing.empty()) return both + " (narrowed: " + missing + " missing)";
  }
  for (const auto& [key, value] : b)
    if (a.count(key) == 0) return key_label(key) + ": not given in the log, '" + value + "' now";
  return "";
}

}  // namespace sinkgrad::study
