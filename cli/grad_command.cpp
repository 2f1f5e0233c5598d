// `sinkgrad grad`: dL/dM for the logits and grad_output in an HDF5 file.
//
// The command line is checked completely (solver, options, dtype, T, device) before any file
// is touched; the inputs are checked (datasets, shapes, types) before anything is computed; the
// output is written under a temporary name and renamed into place only when complete.

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/common_options.hpp"
#include "cli/grad_solve.hpp"
#include "cli/interrupt_cleanup.hpp"
#include "cli/text_format.hpp"
#include "core/forward_spec.hpp"
#include "core/limits.hpp"
#include "core/solver_registry.hpp"
#include "io/hdf5.hpp"

namespace sinkgrad::cli {
namespace {

GradRequest read_request(const po::variables_map& values) {
  GradRequest request;
  request.input = values["input"].as<std::string>();
  request.output = values["output"].as<std::string>();
  request.solver = values["solver"].as<std::string>();
  request.iterations = values["iterations"].as<int>();
  try {
    limits::check_forward_iterations(request.iterations, "--iterations (the forward's T)");
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  try {
    if (values.count("dtype")) request.dtype = parse_precision(values["dtype"].as<std::string>());
  } catch (const Error& error) {
    throw UsageError(std::string("--dtype: ") + error.what());
  }
  try {
    request.device = parse_device(values["device"].as<std::string>());
  } catch (const Error& error) {
    throw UsageError(std::string("--device: ") + error.what());
  }
  std::optional<double> eps;
  if (values.count("eps")) eps = parse_real_option("eps", values["eps"].as<std::string>());
  try {
    request.forward = make_forward_spec(values["forward"].as<std::string>(), eps);
  } catch (const Error& error) {
    throw UsageError(std::string("--forward/--eps: ") + error.what());
  }
  if (values.count("option")) {
    for (const std::string& text : values["option"].as<std::vector<std::string>>()) {
      std::pair<std::string, std::string> key_value;
      try {
        key_value = parse_key_value(text);
      } catch (const Error& error) {
        throw UsageError(std::string("--option: ") + error.what());
      }
      if (!request.options.emplace(key_value).second)
        throw UsageError("--option " + key_value.first + " is given more than once");
    }
  }
  return request;
}

std::string shape_text(const h5::BatchInfo& info) {
  return "(" + std::to_string(info.batch) + ", " + std::to_string(info.n) + ", " +
         std::to_string(info.n) + ")";
}

void print_summary(const GradRequest& request, const BackwardSolver& solver, Precision precision,
                   const GradSummary& summary) {
  std::cout << "sinkgrad grad: " << request.output << ": " << summary.batch << " matrices "
            << summary.n << "x" << summary.n << ", " << to_string(precision)
            << ", T=" << request.iterations << ", forward " << describe(request.forward) << ", "
            << solver.name() << " on " << to_string(request.device) << "; status:";
  for (int code = 0; code < status_count; ++code)
    std::cout << (code ? "," : "") << " " << to_string(static_cast<SolveStatus>(code)) << " "
              << summary.status_counts[static_cast<size_t>(code)];
  if (summary.non_finite_logits > 0)
    std::cout << " (" << summary.non_finite_logits << " with non-finite logits)";
  if (summary.saturated > 0)
    std::cout << " (" << summary.saturated << " saturated: an entry of R is 0)";
  std::cout << "; forward " << fixed(summary.forward_seconds, 3) << " s, backward "
            << fixed(summary.backward_seconds, 3) << " s\n";
}

int run_grad(const po::variables_map& values) {
  const GradRequest request = read_request(values);
  std::unique_ptr<BackwardSolver> solver;
  try {
    solver = SolverRegistry::global().create(request.solver, request.options);
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  if (!solver->info().supports(request.device)) {
    std::string devices;
    for (Device d : solver->info().devices)
      devices += (devices.empty() ? "" : ", ") + std::string(to_string(d));
    throw UsageError("solver '" + solver->name() + "' does not run on " +
                     std::string(to_string(request.device)) +
                     " in this build (it runs on: " + devices + ")");
  }

  Precision precision = Precision::float64;
  GradSummary summary;
  {
    std::optional<ReplaceOnCommit> output;  // created once the inputs are known to be good
    std::optional<RemoveOnInterrupt> interrupt_guard;
    {
      const h5::File input = h5::File::open(request.input);
      // Before any dataset is opened: reading one may follow a link to another file.
      const std::vector<h5::LinkedFile> linked =
          h5::linked_files(input, {logits_name, grad_output_name});
      h5::refuse_output_among(request.output, linked);
      std::vector<std::string> inputs{request.input};
      for (const h5::LinkedFile& file : linked) inputs.push_back(file.path);
      const h5::BatchInfo logits = h5::inspect_batch(input, logits_name);
      const h5::BatchInfo grad_output = h5::inspect_batch(input, grad_output_name);
      if (logits.batch != grad_output.batch || logits.n != grad_output.n)
        throw Error("file '" + request.input + "': dataset 'logits' has shape " +
                    shape_text(logits) + " but dataset 'grad_output' has shape " +
                    shape_text(grad_output) + "; they must have the same shape");
      precision = request.dtype.value_or(logits.precision);
      if (!solver->info().supports(precision))
        throw UsageError("solver '" + solver->name() + "' does not support " +
                         std::string(to_string(precision)));
      require_memory(
          grad_memory(logits, precision, request.iterations, solver->info().needs_logits),
          "grad of '" + request.input + "' " + shape_text(logits));
      output.emplace(request.output, inputs);
      interrupt_guard.emplace(output->temporary_path());
      const std::string& path = output->temporary_path();
      summary = precision == Precision::float32
                    ? solve_and_write<float>(request, *solver, input, path)
                    : solve_and_write<double>(request, *solver, input, path);
    }  // every HDF5 handle is closed here, before the output is moved into place
    output->commit();
  }
  print_summary(request, *solver, precision, summary);
  return exit_ok;
}

}  // namespace

Command make_grad_command() {
  Command command;
  command.name = "grad";
  command.summary =
      "Compute dL/dM for the logits M and grad_output G = dL/dR in an HDF5 file: runs the "
      "T-step Sinkhorn forward, then the chosen backward solver.";
  command.usage =
      "--input IN.h5 --output OUT.h5 --solver NAME [--iterations T] [--forward NAME [--eps X]] "
      "[--dtype float32|float64] [--device cpu|cuda] [--option key=value ...]";
  command.description =
      "Input: datasets 'logits' and 'grad_output', both of shape (B, n, n), float32 or "
      "float64.\n\n"
      "Output (replaced only when complete; an existing file is left untouched on any error): "
      "'R' and 'grad_logits' (B, n, n) in --dtype, 'status' and 'iterations' (B) int32, "
      "'column_violation' (B) in --dtype = max |sum - 1| over the marginal the forward's last "
      "step leaves inexact (columns where the first step normalises columns, else rows); "
      "the solve's diagnostics (B) under 'diagnostics/': row_violation, column_violation, "
      "relative_residual (CG's final ||r|| / ||b||) and zero_entries (int32); "
      "attributes solver, options, T, forward, eps, dtype, device, sinkgrad_version, input, "
      "status_codes.\n\n"
      "Status codes: 0 ok, 1 not_converged (CG stopped at max_iterations; its last iterate is "
      "written), 2 breakdown (CG: the last iterate's gradient where that is finite, else NaN; a "
      "singular factorisation or non-finite arithmetic: NaN), 3 invalid_input (NaN/Inf input or "
      "a zero row or column; gradient NaN), 4 ill_conditioned (the system is singular to rounding "
      "in a direction that changes the gradient: direct plain's eigenvalue near its cut, a CG "
      "stop at b's rounding where the operator vanishes too, or cg_plain's true residual far "
      "above its recurrence's; written, not trusted), 5 fallback (auto: "
      "unrolled's exact gradient for this matrix; a success). A gradient with NaN/Inf is never "
      "counted as ok: it is reported as breakdown. A run with failed matrices still exits 0: read "
      "'status'.\n\n"
      "Example: sinkgrad grad --input in.h5 --output out.h5 --solver cg_corrected "
      "--iterations 20 --option max_iterations=16 --option tolerance=1e-10";
  command.add_options = [](po::options_description& options) {
    std::string names;
    for (const std::string& name : SolverRegistry::global().names())
      names += (names.empty() ? "" : ", ") + name;
    options.add_options()  //
        ("input,i", po::value<std::string>()->required()->value_name("IN.h5"),
         "HDF5 file with datasets 'logits' and 'grad_output', each (B, n, n)")  //
        ("output,o", po::value<std::string>()->required()->value_name("OUT.h5"),
         "HDF5 file to write (replaced if it exists)")  //
        ("solver,s", po::value<std::string>()->required()->value_name("NAME"),
         ("backward solver: " + names + " (see 'sinkgrad solvers')").c_str())  //
        ("iterations,T", po::value<int>()->default_value(20)->value_name("T"),
         ("Sinkhorn iterations of the forward, 1 <= T <= " +
          std::to_string(limits::max_forward_iterations))
             .c_str())  //
        ("forward", po::value<std::string>()->default_value("columns_first")->value_name("NAME"),
         ("forward convention: " + forward_conventions_help()).c_str())  //
        ("eps", po::value<std::string>()->value_name("X"),
         "the eps of every normalising denominator (sum + eps or max(sum, eps)) and of the "
         "base, finite and >= 0 (default: the convention's own, as listed under --forward)")  //
        ("dtype", po::value<std::string>()->value_name("float32|float64"),
         "precision of the computation and of the output (default: that of the input's "
         "logits)")  //
        ("device", po::value<std::string>()->default_value("cpu")->value_name("cpu|cuda"),
         "where the backward solve runs (the forward runs on the cpu)")  //
        ("option", po::value<std::vector<std::string>>()->value_name("key=value"),
         "a solver option, repeatable (see 'sinkgrad solvers')");
  };
  command.run = run_grad;
  return command;
}

}  // namespace sinkgrad::cli
