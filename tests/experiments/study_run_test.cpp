// The smoke study run end to end through run_study: the log holds every run of the sweep once,
// with the documented groups, attributes and datasets (docs/experiments.md); an interrupted
// sweep (stopped after k runs, with a half-written group as a kill would leave) resumes to
// each run exactly once; a log is never overwritten or mixed with another definition.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/solver_registry.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/study_log.hpp"
#include "experiments/study/study_runner.hpp"
#include "experiments/study/sweep.hpp"
#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace sinkgrad::study {
namespace {

using sinkgrad::testing::ScratchDir;

const std::string smoke_path = std::string(SINKGRAD_SOURCE_DIR) + "/experiments/smoke.ini";

StudyDefinition smoke() {
  return read_definition(smoke_path, SolverRegistry::global());
}

RunnerOptions options_for(const std::string& output) {
  RunnerOptions options;
  options.output = output;
  options.devices = {"cpu"};
  options.tool_version = "test";
  return options;
}

std::vector<std::string> sweep_ids(const StudyDefinition& definition) {
  std::vector<std::string> ids;
  for (const RunSpec& run : expand_sweep(definition, {Device::cpu}).runs) ids.push_back(run.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Every finished run group's id, and checks that keys are unique.
std::vector<std::string> logged_ids(const std::string& path) {
  const h5::File log = h5::File::open(path);
  const h5::Group runs = log.open_group("runs");
  std::vector<std::string> ids;
  std::set<std::string> keys;
  for (const std::string& id : runs.children()) {
    const h5::Group run = runs.open_group(id);
    EXPECT_EQ(h5::read_int_attribute(run, "complete"), 1) << id;
    const std::string key = h5::read_string_attribute(run, "key");
    EXPECT_TRUE(keys.insert(key).second) << "duplicate run: " << key;
    EXPECT_EQ(stable_id("run", key), id);
    ids.push_back(id);
  }
  return ids;
}

void expect_metrics_group(const h5::Group& run, const std::string& name, index_t batch) {
  ASSERT_TRUE(run.has_group(name)) << run.path() << " lacks " << name;
  const h5::Group group = run.open_group(name);
  for (const char* attribute : {"mean_abs", "max_abs", "mean_rel", "max_rel", "frobenius_median",
                                "frobenius_p95", "frobenius_max", "measured"})
    EXPECT_TRUE(h5::has_attribute(group, attribute)) << group.path() << " lacks " << attribute;
  EXPECT_EQ(h5::read_vector<double>(group, "frobenius").size(), static_cast<std::size_t>(batch));
}

// The measured solve's diagnostics: the smoke study's float64 R has exact rows, the forward's
// column violation (from the forward's own sums), no zeros, and CG's final residual within
// tolerance where every matrix is ok (NaN for the solvers without CG).
void expect_diagnostics(const h5::Group& run, bool iterative, bool all_ok) {
  const auto read = [&](const char* name) { return h5::read_double_attribute(run, name); };
  EXPECT_LE(read("row_violation_median"), read("row_violation_max"));
  EXPECT_LE(read("row_violation_max"), 1e-13);
  EXPECT_NEAR(read("column_violation_max"), read("forward_violation_max"), 1e-12);
  EXPECT_NEAR(read("column_violation_median"), read("forward_violation_median"), 1e-12);
  EXPECT_EQ(h5::read_int_attribute(run, "saturated_matrices"), 0);
  const double residual = read("final_residual_max");
  if (!iterative) {
    EXPECT_TRUE(std::isnan(residual)) << run.path();
  } else if (all_ok) {
    EXPECT_LE(residual, 1e-12) << run.path();
  } else {
    EXPECT_TRUE(std::isfinite(residual)) << run.path();
  }
  EXPECT_EQ(std::isnan(read("final_residual_median")), std::isnan(residual));
}

TEST(StudyRun, SmokeStudyWritesTheDocumentedLog) {
  const ScratchDir dir;
  const std::string path = dir.file("smoke.h5");
  const StudyDefinition definition = smoke();
  const RunnerSummary summary = run_study(definition, options_for(path));
  const std::vector<std::string> expected = sweep_ids(definition);
  EXPECT_EQ(summary.total, expected.size());
  EXPECT_EQ(summary.done_now, expected.size());
  EXPECT_EQ(summary.remaining, 0u);

  const h5::File log = h5::File::open(path);
  EXPECT_EQ(h5::read_string_attribute(log, "schema"), log_schema);
  EXPECT_EQ(h5::read_int_attribute(log, "schema_version"), log_schema_version);
  EXPECT_EQ(h5::read_string_attribute(log, "tool_version"), "test");
  std::ifstream file(smoke_path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(h5::read_string_attribute(log, "definition"), text.str());
  EXPECT_EQ(h5::read_string_attribute(log, "study_name"), "smoke");
  EXPECT_EQ(h5::read_string_attribute(log, "started").size(), 20u);  // 2026-01-01T00:00:00Z
  EXPECT_FALSE(h5::read_string_attribute(log, "host").empty());
  EXPECT_EQ(h5::read_string_attribute(log, "devices").rfind("cpu: ", 0), 0u);

  std::vector<std::string> ids = logged_ids(path);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, expected);

  // Inputs and references: each input once, its references per T and the converged one.
  const Sweep sweep = expand_sweep(definition, {Device::cpu});
  for (const InputSpec& input : sweep.inputs) {
    const h5::Group group = log.open_group("inputs/" + input.id);
    EXPECT_EQ(h5::read_string_attribute(group, "key"), input.key);
    EXPECT_EQ(h5::inspect_batch(group, "logits").batch, input.batch);
    EXPECT_EQ(h5::inspect_batch(group, "grad_output").n, input.n);
    const h5::Group references = log.open_group("references/" + input.id + "/float64");
    for (const int T : definition.iterations)
      EXPECT_EQ(h5::read_int_attribute(references.open_group("T_" + std::to_string(T)), "T"), T);
    const h5::Group converged = references.open_group("converged");
    EXPECT_EQ(h5::read_int_attribute(converged, "reached"), 1) << input.key;
    EXPECT_LT(h5::read_double_attribute(converged, "violation_max"), 1e-13);
    EXPECT_GE(h5::read_int_attribute(converged, "T"), 64);
  }

  const h5::Group runs = log.open_group("runs");
  for (const std::string& id : ids) {
    const h5::Group run = runs.open_group(id);
    for (const char* attribute : {"key",
                                  "input",
                                  "n",
                                  "batch",
                                  "logits_source",
                                  "seed",
                                  "T",
                                  "precision",
                                  "solver",
                                  "options",
                                  "device",
                                  "started",
                                  "wall_seconds",
                                  "forward_violation_max",
                                  "forward_violation_median",
                                  "converged_T",
                                  "solve_seconds",
                                  "solve_seconds_min",
                                  "timing_repeats",
                                  "timing_method",
                                  "iterations_mean",
                                  "iterations_max",
                                  "status_counts",
                                  "status_names",
                                  "complete"})
      EXPECT_TRUE(h5::has_attribute(run, attribute)) << id << " lacks " << attribute;
    const index_t batch = h5::read_int_attribute(run, "batch");
    const auto counts = h5::read_int_array_attribute(run, "status_counts");
    // ok, not_converged, breakdown, invalid_input, ill_conditioned, fallback
    ASSERT_EQ(counts.size(), 6u);
    EXPECT_EQ(counts[0] + counts[1] + counts[2] + counts[3] + counts[4] + counts[5], batch);
    EXPECT_EQ(h5::read_vector<std::int32_t>(run, "iterations").size(),
              static_cast<std::size_t>(batch));
    expect_metrics_group(run, "error_vs_unrolled", batch);
    expect_metrics_group(run, "error_vs_converged", batch);

    const std::string solver = h5::read_string_attribute(run, "solver");
    const bool iterative = solver.rfind("cg_", 0) == 0 || solver == "auto";  // auto runs CG
    EXPECT_EQ(run.has_group("convergence"), iterative) << id << " " << solver;
    // auto's record is CG's where CG ran and NaN where its matrices fell back.
    if (solver != "auto") expect_diagnostics(run, iterative, counts[0] == batch);
    if (iterative && solver != "auto") {
      const h5::Group c = run.open_group("convergence");
      const auto K = static_cast<std::size_t>(h5::read_int_attribute(run, "iterations_max"));
      EXPECT_EQ(h5::read_vector<double>(c, "residual_median").size(), K + 1);
      EXPECT_EQ(h5::read_vector<double>(c, "residual_max").size(), K + 1);
      EXPECT_EQ(h5::read_vector<double>(c, "relative_residual_median").front(), 1.0);
      const auto errors = h5::read_vector<double>(c, "iterate_error_vs_unrolled_median");
      EXPECT_EQ(errors.size(), K);
      EXPECT_EQ(h5::read_vector<double>(c, "iterate_error_vs_converged_median").size(), K);
      // The last iterate is the measured solve's gradient.
      if (K > 0) {
        EXPECT_DOUBLE_EQ(
            errors.back(),
            h5::read_double_attribute(run.open_group("error_vs_unrolled"), "frobenius_median"))
            << id;
      }
    }
    if (solver == "unrolled") {  // the T-step reference is the unrolled gradient itself
      EXPECT_EQ(h5::read_double_attribute(run.open_group("error_vs_unrolled"), "max_abs"), 0.0);
    }
  }
}

TEST(StudyRun, InterruptedSweepResumesWithEachRunExactlyOnce) {
  const ScratchDir dir;
  const std::string path = dir.file("interrupted.h5");
  const StudyDefinition definition = smoke();
  const std::vector<std::string> expected = sweep_ids(definition);

  RunnerOptions options = options_for(path);
  options.max_runs = 7;
  RunnerSummary summary = run_study(definition, options);
  EXPECT_EQ(summary.done_now, 7u);
  EXPECT_EQ(summary.remaining, expected.size() - 7);
  EXPECT_EQ(logged_ids(path).size(), 7u);

  // What a kill in the middle of writing leaves: groups without `complete`.
  {
    const h5::File log = h5::File::open(path, h5::File::Mode::read_write);
    const h5::Group partial = log.create_group("runs/" + expected.front() + "_partial");
    h5::write_string_attribute(partial, "key", "half-written");
    log.create_group("references/input_0000000000000000/float64/T_1");
  }

  options.resume = true;
  options.max_runs = 5;
  summary = run_study(definition, options);
  EXPECT_EQ(summary.already_done, 7u);
  EXPECT_EQ(summary.done_now, 5u);

  options.max_runs.reset();
  summary = run_study(definition, options);
  EXPECT_EQ(summary.already_done, 12u);
  EXPECT_EQ(summary.done_now, expected.size() - 12);

  std::vector<std::string> ids = logged_ids(path);  // also checks: no key twice
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, expected);
  {
    const h5::File log = h5::File::open(path);
    EXPECT_FALSE(log.has("references/input_0000000000000000/float64/T_1"));
  }

  summary = run_study(definition, options);  // complete: nothing left to run
  EXPECT_EQ(summary.done_now, 0u);
  EXPECT_EQ(summary.already_done, expected.size());
}

TEST(StudyRun, ResumedRunsEqualUninterruptedOnes) {
  const ScratchDir dir;
  const StudyDefinition definition = smoke();
  RunnerOptions whole = options_for(dir.file("whole.h5"));
  run_study(definition, whole);
  RunnerOptions parts = options_for(dir.file("parts.h5"));
  parts.max_runs = 20;
  run_study(definition, parts);
  parts.resume = true;
  parts.max_runs.reset();
  run_study(definition, parts);

  const h5::File a = h5::File::open(whole.output), b = h5::File::open(parts.output);
  for (const std::string& id : a.open_group("runs").children()) {
    const h5::Group ra = a.open_group("runs/" + id + "/error_vs_converged");
    const h5::Group rb = b.open_group("runs/" + id + "/error_vs_converged");
    EXPECT_EQ(h5::read_vector<double>(ra, "frobenius"), h5::read_vector<double>(rb, "frobenius"))
        << id;
  }
}

TEST(StudyRun, LogsAreNeverOverwrittenOrMixed) {
  const ScratchDir dir;
  const std::string path = dir.file("log.h5");
  StudyDefinition definition = smoke();
  RunnerOptions options = options_for(path);
  options.max_runs = 1;
  run_study(definition, options);
  try {
    run_study(definition, options);
    ADD_FAILURE() << "an existing log was accepted without --resume";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--resume"), std::string::npos) << error.what();
  }
  // A narrowed sweep list is refused (a widened one is a resume: study_cli_test.cpp).
  definition.entries["forward.T"] = "1";
  options.resume = true;
  try {
    run_study(definition, options);
    ADD_FAILURE() << "a log of another study was resumed";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("[forward] T: '1, 4' in the log, '1' now (narrowed: 4 missing)"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(logged_ids(path).size(), 1u);
}

}  // namespace
}  // namespace sinkgrad::study
