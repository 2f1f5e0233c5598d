// `sinkgrad summary LOG.h5`: the runs of a study log as one table (aligned text or CSV), a row
// per finished run with its sweep parameters and key results.

#include <iostream>

#include "cli/command.hpp"
#include "experiments/study/log_summary.hpp"

namespace sinkgrad::cli {
namespace {

int run_summary(const po::variables_map& values) {
  const std::string path = values["log"].as<std::string>();
  const bool csv = values.count("csv") != 0;
  study::SummaryTable table = study::summarise_log(path);
  if (values.count("where")) {
    try {
      study::keep_rows_where(table, values["where"].as<std::vector<std::string>>(), path);
    } catch (const Error& error) {
      throw UsageError(error.what());
    }
  }
  std::cout << (csv ? study::csv_text(table) : study::aligned_text(table));
  return exit_ok;
}

}  // namespace

Command make_summary_command() {
  Command command;
  command.name = "summary";
  command.summary =
      "Tabulate a study log: one row per finished run with its parameters, the median / p95 / "
      "max relative error against both references, status counts, iterations and time.";
  command.usage = "LOG.h5 [--csv] [--where COLUMN=VALUE ...]";
  command.description =
      "Columns: logits, n, batch, seed, precision, solver, options, device, T; err_unrolled_* "
      "and err_converged_* (median, p95, max over the batch of the per-matrix relative "
      "Frobenius error ||g - ref||_F / ||ref||_F); one count of matrices per solve status "
      "(ok, not_converged, breakdown, invalid_input, ill_conditioned, fallback); "
      "iterations_mean, iterations_max, final_residual_max, saturated; "
      "solve_seconds (median of the timed solves of the whole batch) and wall_seconds (the "
      "whole run). Rows are sorted by logits, n, seed, precision, solver, options, device, T. "
      "The table rounds numbers to 3 digits; --csv writes every number with 17 significant "
      "digits (it reads back to the logged value). --where compares numbers as the logged "
      "values (within a relative 1e-12; inf matches inf, nan matches nan), with or without "
      "--csv, and refuses a value that is not a number for a numeric column; option.NAME names "
      "a solver option.\n"
      "Example: sinkgrad summary headline.h5 --where solver=cg_plain --where T=20";
  command.add_options = [](po::options_description& options) {
    options.add_options()  //
        ("log", po::value<std::string>()->required()->value_name("LOG.h5"),
         "the study log `sinkgrad run` wrote (also the first positional argument)")      //
        ("csv", "comma-separated values with a header line, numbers in full precision")  //
        ("where", po::value<std::vector<std::string>>()->value_name("COLUMN=VALUE"),
         "keep the runs where the column has this value (numbers compare as numbers; "
         "option.NAME tests a solver option); repeat to combine");
  };
  command.positional = {"log"};
  command.run = run_summary;
  return command;
}

}  // namespace sinkgrad::cli
