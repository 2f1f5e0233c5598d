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
  std::vector<bool> real;          // per column: a logged double (aligned_text rounds it)
  std::vector<std::vector<std::string>> rows;
  // Per row: each option of the run as "option.NAME" -> value (for --where, not printed).
  std::vector<std::map<std::string, std::string>> row_options;
};

// Reads every finished run of the log, sorted by logits, n, seed, precision, solver, options,
// device, T; numbers with 17 significant digits (they read back to the logged double). Throws
// sinkgrad::Error for a file that is not a study log.
SummaryTable summarise_log(const std::string& path);

// Keeps the rows where every "column=value" holds: numbers compare as the logged numbers
// (within a relative 1e-12; inf only with inf, nan with nan), whatever the output's rounding;
// an option of the run can be named "option.NAME" and compares alike. An unknown column or
// option, or a condition without '=', throws sinkgrad::Error naming it and the known ones.
void keep_rows_where(SummaryTable& table, const std::vector<std::string>& conditions,
                     const std::string& path);

std::string csv_text(const SummaryTable& table);
// Aligned columns, the real-valued ones rounded to 3 significant digits.
std::string aligned_text(SummaryTable table);

}  // namespace sinkgrad::study
