// `sinkgrad run` overrides, resume keyed on the parsed study, the default log location,
// progress lines without a terminal, and `sinkgrad summary`, all through the real binary; the
// summary's CSV is checked against the log read independently with the HDF5 layer.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/experiments/study_test_support.hpp"

namespace sinkgrad::study {
namespace {

using sinkgrad::testing::CliResult;
using sinkgrad::testing::read_text;
using sinkgrad::testing::run_cli;
using sinkgrad::testing::ScratchDir;
using sinkgrad::testing::shell_quoted;
using sinkgrad::testing::write_text;
using testing::contains;
using testing::runs_of;
using testing::tiny;

std::set<std::int64_t> values_of(const std::string& path, const char* attribute) {
  const h5::File log = h5::File::open(path);
  std::set<std::int64_t> values;
  for (const auto& [key, run] : runs_of(log)) values.insert(h5::read_int_attribute(run, attribute));
  return values;
}

// Runs the binary in `directory` (for the default log location); stderr to a pipe file.
CliResult run_in(const std::string& directory, const std::vector<std::string>& args) {
  const ScratchDir capture;
  std::string command = "cd ";
  command.append(shell_quoted(directory)).append(" && ").append(shell_quoted(SINKGRAD_CLI_PATH));
  for (const std::string& arg : args) command.append(" ").append(shell_quoted(arg));
  command.append(" >").append(shell_quoted(capture.file("out")));
  command.append(" 2>").append(shell_quoted(capture.file("err")));
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(capture.file("out")),
          read_text(capture.file("err"))};
}

TEST(StudyOverrides, ScalarAndListValuesReplaceTheDefinitionAndAreLogged) {
  const ScratchDir dir;
  write_text(dir.file("tiny.ini"), tiny);
  const std::string log = dir.file("o.h5");
  const auto result = run_cli(
      {"run", dir.file("tiny.ini"), "inputs.n=5", "forward.T=2,3,7", "--output", log, "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "6 runs")) << result.out;  // 3 T x 2 solvers
  EXPECT_EQ(values_of(log, "n"), (std::set<std::int64_t>{5}));
  EXPECT_EQ(values_of(log, "T"), (std::set<std::int64_t>{2, 3, 7}));
  const h5::File file = h5::File::open(log);
  EXPECT_EQ(h5::read_string_attribute(file, "overrides"), "inputs.n=5\nforward.T=2,3,7\n");
  const std::string study = h5::read_string_attribute(file, "study");
  EXPECT_TRUE(contains(study, "T = 2, 3, 7")) << study;
  EXPECT_TRUE(contains(study, "n = 5")) << study;
}

TEST(StudyOverrides, UnknownKeyOrMalformedOverrideIsRefusedNamingIt) {
  const ScratchDir dir;
  write_text(dir.file("tiny.ini"), tiny);
  const std::string log = dir.file("bad.h5");
  auto result = run_cli({"run", dir.file("tiny.ini"), "inputs.size=4", "--output", log});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "inputs.size=4")) << result.err;
  EXPECT_TRUE(contains(result.err, "unknown key 'size'")) << result.err;
  EXPECT_FALSE(std::filesystem::exists(log));

  result =
      run_cli({"run", dir.file("tiny.ini"), "solver.cg_corrected.max_iter=3", "--output", log});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "max_iter")) << result.err;
  EXPECT_TRUE(contains(result.err, "max_iterations")) << result.err;

  result = run_cli({"run", dir.file("tiny.ini"), "forward.T", "--output", log});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "section.key=value")) << result.err;

  result = run_cli({"run", dir.file("tiny.ini"), "forward.T=0", "--output", log});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "[forward] T")) << result.err;
  EXPECT_FALSE(std::filesystem::exists(log));
}

TEST(StudyResume, CommentAndLayoutEditsAreAcceptedAChangedValueIsRefusedNamingTheKey) {
  const ScratchDir dir;
  const std::string definition = dir.file("tiny.ini");
  write_text(definition, tiny);
  const std::string log = dir.file("r.h5");
  auto result = run_cli({"run", definition, "--output", log, "--max-runs", "2", "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;

  // Comments, blank lines and spacing do not change the study.
  std::string edited = std::regex_replace(tiny, std::regex("T = 1, 2"), "T=1 ,2   # T list");
  edited = "# a new comment line\n\n" + edited;
  write_text(definition, edited);
  result = run_cli({"run", definition, "--output", log, "--resume", "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "2 already in the log, 2 run now")) << result.out;

  // A narrowed sweep list is refused naming the key and what is missing; so is a changed fixed
  // setting, and the same change given as an override.
  write_text(definition, std::regex_replace(tiny, std::regex("T = 1, 2"), "T = 2"));
  result = run_cli({"run", definition, "--output", log, "--resume"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.err, "[forward] T: '1, 2' in the log, '2' now (narrowed: 1 missing)"))
      << result.err;
  write_text(definition, tiny);
  result = run_cli({"run", definition, "inputs.batch=5", "--output", log, "--resume"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.err, "[inputs] batch: '4' in the log, '5' now (a fixed setting)"))
      << result.err;
  // Without --resume an existing log is refused, naming --resume.
  result = run_cli({"run", definition, "--output", log});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.err, "exists; pass --resume")) << result.err;
  result = run_cli({"run", definition, "forward.T=1,2", "--output", log, "--resume", "--quiet"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "4 already in the log")) << result.out;
}

TEST(StudyRun, DefaultLogGoesToTheCurrentDirectoryNotNextToTheDefinition) {
  const ScratchDir sources, work;
  write_text(sources.file("tiny.ini"), tiny);
  const auto result = run_in(work.file(""), {"run", sources.file("tiny.ini"), "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::filesystem::exists(work.file("tiny.h5")));
  EXPECT_FALSE(std::filesystem::exists(sources.file("tiny.h5")));
  EXPECT_TRUE(contains(result.out, "tiny.h5")) << result.out;
}

TEST(StudyRun, ProgressLinesAppearOnStderrWithoutATerminalUnlessQuiet) {
  const ScratchDir dir;
  write_text(dir.file("tiny.ini"), tiny);
  const std::vector<std::string> args{"run", dir.file("tiny.ini"), "forward.T=1,2,3,4,5,6,7,8,9,10",
                                      "--output", dir.file("p.h5")};  // 20 runs
  const auto result = run_cli(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::regex line(R"(sinkgrad run: \[(\d+)/20\] \d+%  elapsed \d+:\d\d  eta (\d+:\d\d|\?))");
  std::istringstream lines(result.err);
  std::string text;
  int progress_lines = 0;
  std::smatch match;
  while (std::getline(lines, text)) {
    ASSERT_TRUE(std::regex_match(text, match, line)) << "unexpected stderr line: " << text;
    EXPECT_EQ(text.find('\r'), std::string::npos);
    ++progress_lines;
  }
  EXPECT_GE(progress_lines, 2) << result.err;
  EXPECT_EQ(match[1].str(), "20") << "the last line reports the whole sweep: " << result.err;

  std::vector<std::string> quiet = args;
  quiet[4] = dir.file("q.h5");
  quiet.push_back("--quiet");
  const auto silent = run_cli(quiet);
  ASSERT_EQ(silent.exit_code, 0) << silent.err;
  EXPECT_EQ(silent.err, "");
}

// Splits CSV without quoted fields containing commas except the "options" column's quotes.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields{""};
  bool quoted = false;
  for (const char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      fields.emplace_back();
    else
      fields.back() += c;
  }
  return fields;
}

TEST(StudySummary, CsvRowsMatchTheLogAndTheTableIsAligned) {
  const ScratchDir dir;
  write_text(dir.file("tiny.ini"), tiny);
  const std::string log = dir.file("s.h5");
  ASSERT_EQ(run_cli({"run", dir.file("tiny.ini"), "solvers.use=all", "--output", log, "--quiet"})
                .exit_code,
            0);
  const auto csv = run_cli({"summary", log, "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  const std::vector<std::string> header = csv_fields(line);
  const auto column = [&](const std::string& name) {
    const auto found = std::find(header.begin(), header.end(), name);
    EXPECT_NE(found, header.end()) << "no column " << name << " in " << line;
    return static_cast<std::size_t>(found - header.begin());
  };
  const h5::File file = h5::File::open(log);
  const std::map<std::string, h5::Group> runs = runs_of(file);
  std::size_t rows = 0;
  while (std::getline(lines, line)) {
    const std::vector<std::string> row = csv_fields(line);
    ASSERT_EQ(row.size(), header.size()) << line;
    const std::string key = "n=" + row[column("n")] + " batch=" + row[column("batch")] +
                            " logits=" + row[column("logits")] + " seed=" + row[column("seed")] +
                            " T=" + row[column("T")] + " precision=" + row[column("precision")] +
                            " solver=" + row[column("solver")] + " options={" +
                            row[column("options")] + "} device=" + row[column("device")];
    const auto run = runs.find(key);
    ASSERT_NE(run, runs.end()) << "no run with key " << key;
    const h5::Group& group = run->second;
    for (const auto& [reference, name] :
         {std::pair{"unrolled", "error_vs_unrolled"}, {"converged", "error_vs_converged"}})
      for (const auto& statistic : {"median", "p95", "max"})
        EXPECT_EQ(std::stod(row[column(std::string("err_") + reference + "_" + statistic)]),
                  h5::read_double_attribute(group.open_group(name),
                                            std::string("frobenius_") + statistic))
            << key;
    const std::vector<std::int64_t> counts = h5::read_int_array_attribute(group, "status_counts");
    EXPECT_EQ(std::stoll(row[column("ok")]), counts[0]) << key;
    EXPECT_EQ(std::stoll(row[column("not_converged")]), counts[1]) << key;
    EXPECT_EQ(std::stod(row[column("solve_seconds")]),
              h5::read_double_attribute(group, "solve_seconds"));
    EXPECT_EQ(std::stoll(row[column("iterations_max")]),
              h5::read_int_attribute(group, "iterations_max"));
    const double residual = h5::read_double_attribute(group, "final_residual_max");
    if (std::isnan(residual)) {
      EXPECT_EQ(row[column("final_residual_max")], "nan") << key;
    } else {
      EXPECT_EQ(std::stod(row[column("final_residual_max")]), residual) << key;
    }
    EXPECT_EQ(std::stoll(row[column("saturated")]),
              h5::read_int_attribute(group, "saturated_matrices"));
    ++rows;
  }
  EXPECT_EQ(rows, runs.size());

  // The table: a header and one line per run, columns aligned (each header starts where the
  // row's cells of that column start or end).
  const auto table = run_cli({"summary", log});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::istringstream table_lines(table.out);
  std::size_t count = 0;
  std::string first;
  while (std::getline(table_lines, line)) {
    if (count == 0) first = line;
    ++count;
  }
  EXPECT_EQ(count, runs.size() + 1) << table.out;
  EXPECT_TRUE(contains(first, "err_unrolled_median")) << first;

  // --where keeps the matching runs; an unknown column is refused naming it.
  const auto where =
      run_cli({"summary", log, "--csv", "--where", "solver=unrolled", "--where", "T=2"});
  ASSERT_EQ(where.exit_code, 0) << where.err;
  EXPECT_EQ(std::count(where.out.begin(), where.out.end(), '\n'), 2) << where.out;
  EXPECT_TRUE(contains(where.out, ",unrolled,")) << where.out;
  // A condition every run meets keeps them all.
  const auto all = run_cli({"summary", log, "--csv", "--where", "n=3", "--where", "batch=4.0"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, csv.out);
  const auto unknown = run_cli({"summary", log, "--where", "colour=red"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "no column 'colour'")) << unknown.err;
  // Numbers compare as the logged values, not as printed: inf matches no finite value, nan the
  // runs printed nan, and a logged value selects the same runs in the table and in the CSV.
  const auto lines_of = [](const std::string& text) {
    return std::count(text.begin(), text.end(), '\n');
  };
  const auto where_T2 = run_cli({"summary", log, "--csv", "--where", "T=2"});
  const auto infinite = run_cli({"summary", log, "--csv", "--where", "T=inf"});
  ASSERT_EQ(infinite.exit_code, 0) << infinite.err;
  EXPECT_EQ(lines_of(infinite.out), 1) << infinite.out;
  long nan_runs = 0;
  double logged = 0;
  for (const auto& [key, group] : runs) {
    nan_runs += std::isnan(h5::read_double_attribute(group, "final_residual_max")) ? 1 : 0;
    const double median =
        h5::read_double_attribute(group.open_group("error_vs_converged"), "frobenius_median");
    if (logged == 0 && median > 0) logged = median;
  }
  ASSERT_GT(nan_runs, 0) << "the study should hold a solver without a residual";
  ASSERT_GT(logged, 0);
  const auto nan = run_cli({"summary", log, "--csv", "--where", "final_residual_max=nan"});
  EXPECT_EQ(lines_of(nan.out), 1 + nan_runs) << nan.out;
  char text[64];
  std::snprintf(text, sizeof text, "err_converged_median=%.17g", logged);
  const auto in_csv = run_cli({"summary", log, "--csv", "--where", text});
  const auto in_table = run_cli({"summary", log, "--where", text});
  EXPECT_GE(lines_of(in_csv.out), 2) << in_csv.out;
  EXPECT_EQ(lines_of(in_table.out), lines_of(in_csv.out)) << in_table.out;
  // Integers compare exactly ("4.0" is 4, nothing is nearly 1); blanks around a value do not
  // count; an empty value is refused.
  EXPECT_EQ(lines_of(run_cli({"summary", log, "--csv", "--where", "seed=1.0"}).out),
            lines_of(csv.out));
  EXPECT_EQ(lines_of(run_cli({"summary", log, "--csv", "--where", "seed=1.0000000000001"}).out), 1);
  EXPECT_EQ(run_cli({"summary", log, "--csv", "--where", "T= 2 "}).out, where_T2.out);
  const auto empty = run_cli({"summary", log, "--where", "T="});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_TRUE(contains(empty.err, "no value after '='")) << empty.err;
  const auto typo = run_cli({"summary", log, "--where", "T=2O"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_TRUE(contains(typo.err, "column 'T' holds numbers and '2O' is not one")) << typo.err;
  // Options compare alike; one that no run has is refused.
  const auto project = run_cli({"summary", log, "--csv", "--where", "option.project=true"});
  EXPECT_GE(lines_of(project.out), 2) << project.out;
  const auto bogus = run_cli({"summary", log, "--where", "option.bogus=1"});
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_TRUE(contains(bogus.err, "has the option 'bogus'")) << bogus.err;
  const auto not_a_log = run_cli({"summary", dir.file("tiny.ini")});
  EXPECT_EQ(not_a_log.exit_code, 1);
  EXPECT_TRUE(contains(not_a_log.err, "tiny.ini")) << not_a_log.err;
}

TEST(StudyCommands, AMissingPositionalArgumentIsNamedAsTheUsageLineShowsIt) {
  const auto summary = run_cli({"summary"});
  EXPECT_EQ(summary.exit_code, 2);
  EXPECT_TRUE(contains(summary.err, "missing LOG.h5 (the first argument, or --log LOG.h5)"))
      << summary.err;
  const auto run = run_cli({"run", "--quiet"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(contains(run.err, "missing DEFINITION.ini (the first argument")) << run.err;
}

TEST(StudySummary, ALogWhoseStatusCountsDoNotMatchItsNamesIsRefusedSayingSo) {
  const ScratchDir dir;
  write_text(dir.file("tiny.ini"), tiny);
  const std::string log = dir.file("t.h5");
  ASSERT_EQ(run_cli({"run", dir.file("tiny.ini"), "--output", log, "--quiet"}).exit_code, 0);
  {
    const h5::File file = h5::File::open(log, h5::File::Mode::read_write);
    const auto runs = runs_of(file);
    ASSERT_FALSE(runs.empty());
    const h5::Group& run = runs.begin()->second;
    std::vector<std::int64_t> counts = h5::read_int_array_attribute(run, "status_counts");
    counts.pop_back();
    h5::write_int_array_attribute(run, "status_counts", counts);
  }
  const auto summary = run_cli({"summary", log});
  EXPECT_EQ(summary.exit_code, 1);
  EXPECT_TRUE(contains(summary.err, "status_counts for its")) << summary.err;
  EXPECT_FALSE(contains(summary.err, "other status names")) << summary.err;
}

}  // namespace
}  // namespace sinkgrad::study
