// `sinkgrad grad`: dL/dM for the logits and grad_output in an HDF5 file.
//
// The command line is checked completely (solver, options, dtype, T, device) before any file
// is touched; the inputs are checked (datasets, shapes, types) before anything is computed; the
// output is written under a temporary name and renamed into place only when complete.

#include <omp.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>

#include "core/solver_registry.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/cli/interrupt_cleanup.hpp"
#include "experiments/cli/text_format.hpp"
#include "experiments/cli/version.hpp"
#include "experiments/io/hdf5.hpp"
#include "experiments/study/solver_contract.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace sinkgrad::cli {
namespace {

constexpr const char* logits_name = "logits";
constexpr const char* grad_output_name = "grad_output";

struct GradRequest {
  std::string input;
  std::string output;
  std::string solver;
  std::map<std::string, std::string> options;
  int iterations = 20;
  std::optional<Precision> dtype;  // default: the precision of the input's logits
  Device device = Device::cpu;
  ForwardSpec forward;
};

struct GradSummary {
  index_t batch = 0;
  int n = 0;
  index_t non_finite_logits = 0;
  std::array<index_t, status_count> status_counts{};
  double forward_seconds = 0;
  double backward_seconds = 0;
};

GradRequest read_request(const po::variables_map& values) {
  GradRequest request;
  request.input = values["input"].as<std::string>();
  request.output = values["output"].as<std::string>();
  request.solver = values["solver"].as<std::string>();
  request.iterations = values["iterations"].as<int>();
  if (request.iterations < 1)
    throw UsageError("--iterations (the forward's T) must be >= 1, got " +
                     std::to_string(request.iterations));
  if (request.iterations > 1000000)
    throw UsageError("--iterations (the forward's T) must be <= 1000000, got " +
                     std::to_string(request.iterations));
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
  try {
    std::optional<double> eps;
    if (values.count("eps")) eps = values["eps"].as<double>();
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

std::string options_text(const OptionValues& options) {
  std::string text;
  for (const auto& [key, value] : options.all())
    text += (text.empty() ? "" : " ") + key + "=" + value;
  return text;
}

std::string shape_text(const h5::BatchInfo& info) {
  return "(" + std::to_string(info.batch) + ", " + std::to_string(info.n) + ", " +
         std::to_string(info.n) + ")";
}

// Everything solve_and_write allocates: logits, grad_output, R and dL/dM, the per-matrix
// vectors, and a per-thread solver workspace (n x n matrices and the unrolled tape, which is
// checkpointed to about 4n sqrt(T) values).
MemoryEstimate grad_memory(const h5::BatchInfo& shape, Precision precision, int T) {
  const std::uint64_t real = precision == Precision::float32 ? 4 : 8;
  const auto n = static_cast<std::uint64_t>(shape.n);
  return MemoryEstimate()
      .batches(4, shape.batch, shape.n, real)
      .add(static_cast<std::uint64_t>(shape.batch), 12 + real)
      .add(static_cast<std::uint64_t>(omp_get_max_threads()),
           (8 * n * n + 4 * n * (static_cast<std::uint64_t>(std::sqrt(double(T))) + 2)) * real);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_metadata(const h5::File& file, const GradRequest& request, const BackwardSolver& solver,
                    Precision precision) {
  h5::write_string_attribute(file, "solver", solver.name());
  h5::write_string_attribute(file, "options", options_text(solver.options()));
  h5::write_int_attribute(file, "T", request.iterations);
  h5::write_string_attribute(file, "forward", std::string(to_string(request.forward.convention)));
  h5::write_double_attribute(file, "eps", request.forward.eps);
  h5::write_string_attribute(file, "dtype", std::string(to_string(precision)));
  h5::write_string_attribute(file, "device", std::string(to_string(request.device)));
  h5::write_string_attribute(file, "sinkgrad_version", version);
  h5::write_string_attribute(file, "input", request.input);
  std::string codes;
  for (int code = 0; code < status_count; ++code)
    codes += (code ? " " : "") + std::to_string(code) + "=" +
             std::string(to_string(static_cast<SolveStatus>(code)));
  h5::write_string_attribute(file, "status_codes", codes);
}

// Reads the inputs in precision Real, runs the forward and the solver, and writes the output
// file at output_path.
template <class Real>
GradSummary solve_and_write(const GradRequest& request, const BackwardSolver& solver,
                            const h5::File& input, const std::string& output_path) {
  const HostBatch<Real> logits = h5::read_batch<Real>(input, logits_name);
  const HostBatch<Real> grad_output = h5::read_batch<Real>(input, grad_output_name);
  GradSummary summary;
  summary.batch = logits.batch();
  summary.n = logits.n();
  const index_t batch = summary.batch;
  const int n = summary.n;
  const int T = request.iterations;

  // The forward runs on the CPU; a cuda solve receives host batches and stages them itself.
  HostBatch<Real> R(batch, n);
  std::vector<Real> column_violation(static_cast<size_t>(batch));
  auto start = std::chrono::steady_clock::now();
  summary.non_finite_logits = sinkhorn_forward<Real>(
      logits.view(), T, R.view(), column_violation.data(), Device::cpu, request.forward);
  summary.forward_seconds = seconds_since(start);

  HostBatch<Real> grad_logits(batch, n);
  std::vector<SolveStatus> status(static_cast<size_t>(batch));
  std::vector<std::int32_t> iterations(static_cast<size_t>(batch));
  start = std::chrono::steady_clock::now();
  study::solve_checked(
      solver,
      BackwardProblem<Real>{logits.view(), R.view(), grad_output.view(), T, request.forward},
      BackwardResult<Real>{grad_logits.view(), status.data(), iterations.data()}, request.device,
      "input '" + request.input + "'");
  summary.backward_seconds = seconds_since(start);

  std::vector<std::int32_t> status_codes(status.size());
  for (size_t b = 0; b < status.size(); ++b) {
    status_codes[b] = static_cast<std::int32_t>(status[b]);
    const auto code = static_cast<size_t>(status_codes[b]);
    if (code < summary.status_counts.size()) ++summary.status_counts[code];
  }

  const h5::File output = h5::File::create(output_path, h5::File::Exists::replace);
  h5::write_batch<Real>(output, "R", R.view());
  h5::write_batch<Real>(output, "grad_logits", grad_logits.view());
  h5::write_vector<std::int32_t>(output, "status", status_codes);
  h5::write_vector<std::int32_t>(output, "iterations", iterations);
  h5::write_vector<Real>(output, "column_violation", column_violation);
  write_metadata(output, request, solver, precision_of<Real>());
  output.flush();
  return summary;
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
      require_memory(grad_memory(logits, precision, request.iterations),
                     "grad of '" + request.input + "' " + shape_text(logits));
      output.emplace(request.output, std::vector<std::string>{request.input});
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
      "step leaves inexact (columns for columns_first, rows for rows_first and tilekernels); "
      "attributes solver, options, T, forward, eps, dtype, device, sinkgrad_version, input, "
      "status_codes.\n\n"
      "Status codes: 0 ok, 1 not_converged (CG stopped at max_iterations; its last iterate is "
      "written), 2 breakdown (gradient NaN), 3 invalid_input (NaN/Inf input or a zero row or "
      "column; gradient NaN), 4 ill_conditioned (direct plain: an eigenvalue within rounding "
      "of the cut changes the gradient; written, not trusted). A gradient with NaN/Inf is never "
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
         "Sinkhorn iterations of the forward (T >= 1)")  //
        ("forward", po::value<std::string>()->default_value("columns_first")->value_name("NAME"),
         "forward convention: columns_first (exp(M), T times columns then rows), rows_first "
         "(rows then columns), tilekernels (softmax_rows(M) + eps, columns, then T - 1 times "
         "rows and columns)")  //
        ("eps", po::value<double>()->value_name("X"),
         "added to every normalising denominator, finite and >= 0 (default 0; 1e-6 for "
         "tilekernels)")  //
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
