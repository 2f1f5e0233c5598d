#include "experiments/study/log_summary.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/status.hpp"
#include "experiments/study/study_log.hpp"
#include "io/hdf5.hpp"
#include "io/writer_lock.hpp"

namespace sinkgrad::study {
namespace {

// The options every row keeps for --where option.NAME, next to the visible columns.
constexpr const char* option_prefix = "option.";

// 17 significant digits: the text reads back to the logged double (aligned_text rounds).
std::string number(double value, int digits = 17) {
  if (std::isnan(value)) return "nan";
  char text[40];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

struct Row {
  std::vector<std::string> cells;
  std::map<std::string, std::string> options;
  std::tuple<std::string, std::int64_t, std::int64_t, std::string, std::string, std::string,
             std::string, std::int64_t>
      order;
};

bool has_column(const SummaryTable& table, const std::string& name, std::size_t* index) {
  const auto found = std::find(table.columns.begin(), table.columns.end(), name);
  if (found == table.columns.end()) return false;
  *index = static_cast<std::size_t>(found - table.columns.begin());
  return true;
}

// The whole text as a number, or nothing.
std::optional<double> parsed_number(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return std::nullopt;
  return value;
}

// The whole text as an integer, or nothing.
std::optional<long long> parsed_integer(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

// Numbers compare as the logged values they are. Integers (n, T, seed, counts) exactly: "4.0"
// matches 4, no tolerance lets one seed stand for its neighbour. Reals equal within a relative
// 1e-12 when finite, infinities only with themselves, nan with nan. Text that is not a number
// compares as text.
bool same_value(const std::string& cell, const std::string& wanted, bool numeric, bool real) {
  if (!numeric) return cell == wanted;
  if (!real) {
    if (const std::optional<long long> a = parsed_integer(cell)) {
      if (const std::optional<long long> b = parsed_integer(wanted)) return *a == *b;
      const std::optional<double> w = parsed_number(wanted);
      return w && std::isfinite(*w) && *w == std::floor(*w) && std::abs(*w) < 0x1p53 &&
             static_cast<long long>(*w) == *a;
    }
  }
  const std::optional<double> a = parsed_number(cell), b = parsed_number(wanted);
  if (!a || !b) return cell == wanted;
  if (std::isnan(*a) || std::isnan(*b)) return std::isnan(*a) && std::isnan(*b);
  if (!std::isfinite(*a) || !std::isfinite(*b)) return *a == *b;
  return *a == *b || std::abs(*a - *b) <= 1e-12 * std::max(std::abs(*a), std::abs(*b));
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

SummaryTable summarise_log(const std::string& path) {
  WriterLock::refuse_while_written(path);
  const h5::File log = h5::File::open(path);
  if (!h5::has_attribute(log, "schema") || h5::read_string_attribute(log, "schema") != log_schema)
    throw Error("'" + path + "' is not a sinkgrad study log (no attribute schema = " + log_schema +
                ")");
  std::vector<std::string> statuses;
  SummaryTable table;
  const auto add = [&](const std::string& name, const std::string& unit, bool numeric,
                       bool real = false) {
    table.columns.push_back(name);
    table.units.push_back(unit);
    table.numeric.push_back(numeric);
    table.real.push_back(real);
  };
  for (const char* name :
       {"logits", "n", "batch", "seed", "precision", "solver", "options", "device", "T"})
    add(name, "",
        std::string(name) == "n" || std::string(name) == "batch" || std::string(name) == "seed" ||
            std::string(name) == "T");
  for (const char* reference : {"unrolled", "converged"})
    for (const char* statistic : {"median", "p95", "max"})
      add(std::string("err_") + reference + "_" + statistic, "relative", true, true);

  std::vector<Row> rows;
  const h5::Group runs = log.open_group("runs");
  for (const std::string& id : runs.children()) {
    const h5::Group run = runs.open_group(id);
    if (!h5::has_attribute(run, "complete") || h5::read_int_attribute(run, "complete") != 1)
      continue;
    Row row;
    const std::string logits = h5::read_string_attribute(run, "logits_source");
    const std::int64_t n = h5::read_int_attribute(run, "n");
    const std::int64_t seed = h5::read_int_attribute(run, "seed");
    const std::int64_t T = h5::read_int_attribute(run, "T");
    const std::string precision = h5::read_string_attribute(run, "precision");
    const std::string solver = h5::read_string_attribute(run, "solver");
    const std::string options = h5::read_string_attribute(run, "options");
    const std::string device = h5::read_string_attribute(run, "device");
    row.order = {logits, n, seed, precision, solver, options, device, T};
    row.cells = {logits,
                 std::to_string(n),
                 std::to_string(h5::read_int_attribute(run, "batch")),
                 std::to_string(seed),
                 precision,
                 solver,
                 options,
                 device,
                 std::to_string(T)};
    for (const char* group : {"error_vs_unrolled", "error_vs_converged"}) {
      const h5::Group metrics = run.open_group(group);
      for (const char* statistic : {"frobenius_median", "frobenius_p95", "frobenius_max"})
        row.cells.push_back(number(h5::read_double_attribute(metrics, statistic)));
    }
    // Status counts, one column per status name the log lists.
    const std::vector<std::int64_t> counts = h5::read_int_array_attribute(run, "status_counts");
    std::vector<std::string> names;
    const std::string listed = h5::read_string_attribute(run, "status_names");
    for (std::size_t start = 0; start <= listed.size();) {
      const auto comma = std::min(listed.find(',', start), listed.size());
      names.push_back(listed.substr(start, comma - start));
      start = comma + 1;
    }
    if (statuses.empty()) statuses = names;
    if (counts.size() != names.size())
      throw Error("'" + path + "': run " + id + " has " + std::to_string(counts.size()) +
                  " status_counts for its " + std::to_string(names.size()) + " status_names");
    if (names != statuses)
      throw Error("'" + path + "': run " + id + " lists other status names than the first run");
    for (const std::int64_t count : counts) row.cells.push_back(std::to_string(count));
    row.cells.push_back(number(h5::read_double_attribute(run, "iterations_mean")));
    row.cells.push_back(std::to_string(h5::read_int_attribute(run, "iterations_max")));
    // The solve's diagnostics (schema_version 3; a log of version 2 has none: nan).
    row.cells.push_back(h5::has_attribute(run, "final_residual_max")
                            ? number(h5::read_double_attribute(run, "final_residual_max"))
                            : "nan");
    row.cells.push_back(h5::has_attribute(run, "saturated_matrices")
                            ? std::to_string(h5::read_int_attribute(run, "saturated_matrices"))
                            : "nan");
    row.cells.push_back(number(h5::read_double_attribute(run, "solve_seconds")));
    row.cells.push_back(number(h5::read_double_attribute(run, "wall_seconds")));
    for (const std::string& attribute : h5::attribute_names(run))
      if (attribute.rfind(option_prefix, 0) == 0)
        row.options[attribute] = h5::read_string_attribute(run, attribute);
    rows.push_back(std::move(row));
  }
  if (statuses.empty())  // a log without runs: the columns a run of this build writes
    for (int code = 0; code < status_count; ++code)
      statuses.emplace_back(to_string(static_cast<SolveStatus>(code)));
  for (const std::string& status : statuses) add(status, "matrices", true);
  add("iterations_mean", "", true, true);
  add("iterations_max", "", true);
  add("final_residual_max", "relative", true, true);
  add("saturated", "matrices", true);
  add("solve_seconds", "s", true, true);
  add("wall_seconds", "s", true, true);

  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.order < b.order; });
  for (const Row& row : rows) {
    table.rows.push_back(row.cells);
    table.row_options.push_back(row.options);
  }
  return table;
}

void keep_rows_where(SummaryTable& table, const std::vector<std::string>& conditions,
                     const std::string& path) {
  std::set<std::string> options;  // every option.NAME of the log's runs
  for (const auto& row : table.row_options)
    for (const auto& [name, value] : row) options.insert(name);
  for (const std::string& condition : conditions) {
    const auto equals = condition.find('=');
    const std::string key = condition.substr(0, equals);
    std::size_t column = 0;
    const bool is_column = equals != std::string::npos && has_column(table, key, &column);
    if (!is_column && equals != std::string::npos && key.rfind(option_prefix, 0) == 0 &&
        options.count(key) == 0) {
      std::string names;
      for (const std::string& name : options) names += (names.empty() ? "" : ", ") + name;
      throw Error("--where '" + condition + "': no run in '" + path + "' has the option '" +
                  key.substr(std::string(option_prefix).size()) + "'" +
                  (names.empty() ? std::string(" (no run has options)") : "; options: " + names));
    }
    if (!is_column && (equals == std::string::npos || key.rfind(option_prefix, 0) != 0)) {
      std::string names;
      for (const std::string& name : table.columns) names += (names.empty() ? "" : ", ") + name;
      throw Error("--where '" + condition + "': " +
                  (equals == std::string::npos ? std::string("not COLUMN=VALUE")
                                               : "no column '" + key + "' in '" + path + "'") +
                  "; columns: " + names + ", option.NAME");
    }
    // Blanks around the value do not count; an empty value is no condition.
    std::string wanted = condition.substr(equals + 1);
    wanted.erase(0, wanted.find_first_not_of(" \t"));
    wanted.erase(wanted.find_last_not_of(" \t") + 1);
    if (wanted.empty())
      throw Error("--where '" + condition + "': no value after '=' (COLUMN=VALUE)");
    // A numeric column compared with text would silently keep nothing (T=4O for T=40).
    if (is_column && table.numeric[column] && !parsed_number(wanted))
      throw Error("--where '" + condition + "': column '" + key + "' holds numbers and '" + wanted +
                  "' is not one");
    std::size_t kept = 0;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      bool match = false;
      if (is_column) {
        match =
            same_value(table.rows[r][column], wanted, table.numeric[column], table.real[column]);
      } else {
        const auto found = table.row_options[r].find(key);
        match =
            found != table.row_options[r].end() && same_value(found->second, wanted, true, true);
      }
      if (!match) continue;
      if (kept != r) {  // a self-move would empty the row
        table.rows[kept] = std::move(table.rows[r]);
        table.row_options[kept] = std::move(table.row_options[r]);
      }
      ++kept;
    }
    table.rows.resize(kept);
    table.row_options.resize(kept);
  }
}

std::string csv_text(const SummaryTable& table) {
  std::string text;
  const auto line = [&text](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += ',';
      text += csv_field(cells[c]);
    }
    text += '\n';
  };
  line(table.columns);
  for (const auto& row : table.rows) line(row);
  return text;
}

std::string aligned_text(SummaryTable table) {
  for (auto& row : table.rows)  // the real-valued columns to 3 significant digits
    for (std::size_t c = 0; c < row.size(); ++c)
      if (table.real[c])
        if (const std::optional<double> value = parsed_number(row[c])) row[c] = number(*value, 3);
  std::vector<std::size_t> width(table.columns.size());
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    width[c] = table.columns[c].size();
    for (const auto& row : table.rows) width[c] = std::max(width[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      text += (c ? "  " : "") + (table.numeric[c] ? pad + cells[c] : cells[c] + pad);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + "\n";
  };
  std::string text = line(table.columns);
  for (const auto& row : table.rows) text += line(row);
  return text;
}

}  // namespace sinkgrad::study
