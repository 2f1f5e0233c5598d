#include "cli/grad_solve.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cli/version.hpp"
#include "experiments/study/solve_checked.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "solvers/unrolled/replay_tape.hpp"

namespace sinkgrad::cli {
namespace {

std::string options_text(const OptionValues& options) {
  std::string text;
  for (const auto& [key, value] : options.all())
    text += (text.empty() ? "" : " ") + key + "=" + value;
  return text;
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
  // "0=ok 1=not_converged ...", appended piece by piece (GCC 12 warns, wrongly, of an
  // overlapping copy in `"" + std::string` once this is inlined here).
  for (int code = 0; code < status_count; ++code) {
    if (code > 0) codes += ' ';
    codes += std::to_string(code);
    codes += '=';
    codes += to_string(static_cast<SolveStatus>(code));
  }
  h5::write_string_attribute(file, "status_codes", codes);
}

}  // namespace

MemoryEstimate grad_memory(const h5::BatchInfo& shape, Precision precision, int T, bool replays) {
  const std::uint64_t real = precision == Precision::float32 ? 4 : 8;
  const auto n = static_cast<std::uint64_t>(shape.n);
  const auto tape =
      replays ? static_cast<std::uint64_t>(math::unrolled_cpu_tape_reals(shape.n, T)) : 0;
  return MemoryEstimate()
      .batches(4, shape.batch, shape.n, real)
      .add(static_cast<std::uint64_t>(shape.batch), 16 + 4 * real)
      .add(static_cast<std::uint64_t>(omp_get_max_threads()), (8 * n * n + tape) * real);
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
  // The solve's diagnostics, every one of them: the output file holds them all.
  std::vector<Real> row_violation(static_cast<size_t>(batch));
  std::vector<Real> solver_column_violation(static_cast<size_t>(batch));
  std::vector<Real> relative_residual(static_cast<size_t>(batch));
  std::vector<std::int32_t> zero_entries(static_cast<size_t>(batch));
  BackwardResult<Real> result{grad_logits.view(), status.data(), iterations.data()};
  result.diagnostics = {row_violation.data(), solver_column_violation.data(),
                        relative_residual.data(), zero_entries.data()};
  start = std::chrono::steady_clock::now();
  study::solve_checked(
      solver,
      BackwardProblem<Real>{logits.view(), R.view(), grad_output.view(), T, request.forward},
      result, request.device, "input '" + request.input + "'");
  summary.backward_seconds = seconds_since(start);

  std::vector<std::int32_t> status_codes(status.size());
  for (size_t b = 0; b < status.size(); ++b) {
    status_codes[b] = static_cast<std::int32_t>(status[b]);
    const auto code = static_cast<size_t>(status_codes[b]);
    if (code < summary.status_counts.size()) ++summary.status_counts[code];
    if (zero_entries[b] > 0) ++summary.saturated;
  }

  // A failed write (a full disk) names the output, not the hidden temporary file it went to.
  try {
    const h5::File output = h5::File::create(output_path, h5::File::Exists::replace);
    h5::write_batch<Real>(output, "R", R.view());
    h5::write_batch<Real>(output, "grad_logits", grad_logits.view());
    h5::write_vector<std::int32_t>(output, "status", status_codes);
    h5::write_vector<std::int32_t>(output, "iterations", iterations);
    h5::write_vector<Real>(output, "column_violation", column_violation);
    const h5::Group diagnostics = output.create_group("diagnostics");
    h5::write_vector<Real>(diagnostics, "row_violation", row_violation);
    h5::write_vector<Real>(diagnostics, "column_violation", solver_column_violation);
    h5::write_vector<Real>(diagnostics, "relative_residual", relative_residual);
    h5::write_vector<std::int32_t>(diagnostics, "zero_entries", zero_entries);
    write_metadata(output, request, solver, precision_of<Real>());
    output.flush();
  } catch (const Error& error) {
    throw Error("cannot write output '" + request.output + "': " + error.what() +
                "; nothing was written under that name");
  }
  return summary;
}

template GradSummary solve_and_write<float>(const GradRequest&, const BackwardSolver&,
                                            const h5::File&, const std::string&);
template GradSummary solve_and_write<double>(const GradRequest&, const BackwardSolver&,
                                             const h5::File&, const std::string&);

}  // namespace sinkgrad::cli
