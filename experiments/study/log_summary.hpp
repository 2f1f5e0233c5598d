#pragma once
// The runs of a study log as one table: a row per finished run with its sweep parameters and
// key results (median / p95 / max relative error against each reference, status counts,
// iterations, time). `sinkgrad summary` prints it aligned or as CSV.

#include <map>
#include <string>
#include <vector>

namespace sinkgrad::study {

struct SummaryTable {
  std::vector<std::string> columns;
  std::vector<std::string> units;  // per column: "" for parameters and counts, "s", "relative"
  std::vector<bool> numeric;       // per column: right-aligned, compared as numbers by --where
  std::vector<std::vector<std::string>> rows;
  // Per row: each option of the run as "option.NAME" -> value (for --where, not printed).
  std::vector<std::map<std::string, std::string>> row_options;
};

// Reads every finished run of the log, sorted by logits, n, seed, precision, solver, options,
// device, T. exact: numbers with 17 significant digits (they read back to the logged double);
// otherwise 3. Throws sinkgrad::Error for a file that is not a study log.
SummaryTable summarise_log(const std::string& path, bool exact);

// Keeps the rows where every "column=value" holds (numbers compare as numbers; an option of
// the run can be named "option.NAME"). An unknown column or a condition without '=' throws
// sinkgrad::Error naming it and the columns.
void keep_rows_where(SummaryTable& table, const std::vector<std::string>& conditions,
                     const std::string& path);

std::string csv_text(const SummaryTable& table);
std::string aligned_text(const SummaryTable& table);

}  // namespace sinkgrad::study
