#include "core/backward_solver.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "core/device_runtime.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/log_base_chain.hpp"
#include "core/memory_spans.hpp"
#include "core/solve_diagnostics.hpp"
#include "core/solver_contract.hpp"

namespace sinkgrad {
namespace {

template <class Real>
void check_same_shape(const char* what, BatchView<const Real> view, BatchView<const Real> ref) {
  if (view.batch != ref.batch || view.n != ref.n)
    throw Error(std::string(what) + " has shape (" + std::to_string(view.batch) + ", " +
                std::to_string(view.n) + ", " + std::to_string(view.n) + "), expected (" +
                std::to_string(ref.batch) + ", " + std::to_string(ref.n) + ", " +
                std::to_string(ref.n) + ")");
}

template <class Real>
bool all_in(MemorySpace space, const BackwardProblem<Real>& p, const BackwardResult<Real>& r) {
  return p.forward_output.space == space && p.grad_output.space == space &&
         (p.logits.data == nullptr || p.logits.space == space) && r.grad_logits.space == space;
}

// Every output (the gradient, status, iterations, the history and the diagnostics, which are
// written before the solve) apart from every input and from the other outputs: a solver still
// reads R, G and M while it writes (in place, a CPU solve overwrote the G it had yet to read and
// reported valid matrices as invalid_input), so overlap is refused.
template <class Real>
void check_outputs_apart(const BackwardProblem<Real>& p, const BackwardResult<Real>& r) {
  const index_t batch = p.forward_output.batch;
  const index_t entries = batch * index_t(p.forward_output.n) * p.forward_output.n;
  const Span inputs[] = {span_of("forward_output (R)", p.forward_output.data, entries),
                         span_of("grad_output (G)", p.grad_output.data, entries),
                         span_of("logits (M)", p.logits.data, entries)};
  const SolveDiagnostics<Real>& d = r.diagnostics;
  const Span outputs[] = {
      span_of("grad_logits", r.grad_logits.data, entries),
      span_of("status", r.status, batch),
      span_of("iterations", r.iterations, batch),
      span_of("residual_history", r.residual_history, batch * index_t(r.history_stride)),
      span_of("row_violation", d.row_violation, batch),
      span_of("column_violation", d.column_violation, batch),
      span_of("relative_residual", d.relative_residual, batch),
      span_of("zero_entries", d.zero_entries, batch)};
  for (std::size_t o = 0; o < std::size(outputs); ++o) {
    for (const Span& other : inputs)
      if (overlap(outputs[o], other))
        throw Error(std::string(outputs[o].what) + " overlaps " + other.what +
                    ": every output needs memory of its own (a solver reads its inputs while it "
                    "writes)");
    for (std::size_t q = o + 1; q < std::size(outputs); ++q)
      if (overlap(outputs[o], outputs[q]))
        throw Error(std::string(outputs[o].what) + " overlaps " + outputs[q].what +
                    ": every output needs memory of its own");
  }
}

// The solver-independent diagnostics of a host batch, OpenMP over the batch.
template <class Real>
void store_diagnostics_on_host(BatchView<const Real> R, const SolveDiagnostics<Real>& d) {
#pragma omp parallel for schedule(static)
  for (index_t b = 0; b < R.batch; ++b) store_matrix_diagnostics(d, b, R.matrix(b), R.n);
}

// dL/d(log B) carried to M in host memory, a row per iteration, OpenMP over the rows.
template <class Real>
void carry_on_host(BatchView<const Real> M, const ForwardSpec& spec,
                   const BackwardResult<Real>& result) {
  const ForwardBase base = forward_recipe(spec.convention).base;
  const int n = M.n;
  const index_t rows = M.batch * n;
#pragma omp parallel for schedule(static)
  for (index_t row = 0; row < rows; ++row)
    if (carries_result_row(result, n, row))
      carry_row_to_logits(RowLanes(n), base, static_cast<Real>(spec.eps), M.data + row * n,
                          result.grad_logits.data + row * n);
}

// The iterates of a solve that writes dL/d(log B), carried to M before they reach the caller's
// sink (from the solver's threads at once, so the copy is per thread).
template <class Real>
class CarriedIterates final : public IterateSink<Real> {
 public:
  CarriedIterates(IterateSink<Real>* sink, BatchView<const Real> M, const ForwardSpec& spec)
      : sink_(sink),
        M_(M),
        base_(forward_recipe(spec.convention).base),
        eps_(static_cast<Real>(spec.eps)) {}

  void gradient(index_t b, int k, const Real* g) override {
    const int n = M_.n;
    thread_local std::vector<Real> carried;
    carried.assign(g, g + index_t(n) * n);
    for (int i = 0; i < n; ++i)
      carry_row_to_logits(RowLanes(n), base_, eps_, M_.matrix(b) + index_t(i) * n,
                          carried.data() + i * n);
    sink_->gradient(b, k, carried.data());
  }

 private:
  IterateSink<Real>* sink_;
  BatchView<const Real> M_;
  ForwardBase base_;
  Real eps_;
};

}  // namespace

bool SolverInfo::supports(Device device) const {
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

bool SolverInfo::supports(Precision precision) const {
  return std::find(precisions.begin(), precisions.end(), precision) != precisions.end();
}

BackwardSolver::BackwardSolver(SolverInfo info, OptionValues options)
    : info_(std::move(info)), options_(std::move(options)) {}

void mark_from_plugin(BackwardSolver& solver) {
  solver.from_plugin_ = true;
}

int BackwardSolver::history_length(int /*n*/, Precision /*precision*/) const {
  return 0;
}

bool BackwardSolver::reports_iterates(Device /*device*/) const {
  return false;
}

void BackwardSolver::solve(const BackwardProblem<float>& problem,
                           const BackwardResult<float>& result, Device device) const {
  checked_solve(problem, result, device);
}

void BackwardSolver::solve(const BackwardProblem<double>& problem,
                           const BackwardResult<double>& result, Device device) const {
  checked_solve(problem, result, device);
}

void BackwardSolver::solve_async(const BackwardProblem<float>& problem,
                                 const BackwardResult<float>& result) const {
  checked_solve(problem, result, Device::cuda, false);
}

void BackwardSolver::solve_async(const BackwardProblem<double>& problem,
                                 const BackwardResult<double>& result) const {
  checked_solve(problem, result, Device::cuda, false);
}

void BackwardSolver::solve_cuda(const BackwardProblem<float>&, const BackwardResult<float>&) const {
  throw Error("solver '" + name() + "' has no CUDA variant");
}

void BackwardSolver::solve_cuda(const BackwardProblem<double>&,
                                const BackwardResult<double>&) const {
  throw Error("solver '" + name() + "' has no CUDA variant");
}

template <class Real>
void BackwardSolver::checked_solve(const BackwardProblem<Real>& problem,
                                   const BackwardResult<Real>& result, Device device,
                                   bool wait) const {
  const Precision precision = precision_of<Real>();
  if (!info_.supports(precision))
    throw Error("solver '" + name() + "' does not support " + std::string(to_string(precision)));
  if (!info_.supports(device))
    throw Error("solver '" + name() + "' does not run on " + std::string(to_string(device)));
  limits::check_forward_iterations(problem.forward_iterations, "the forward iteration count T");
  check_forward_spec(problem.forward);
  const BatchView<const Real> ref = problem.forward_output;
  if (ref.n < 1 || ref.batch < 0) throw Error("forward_output must hold B >= 0 matrices, n >= 1");
  limits::check_batch_shape(ref.batch, ref.n);
  check_same_shape("grad_output", problem.grad_output, ref);
  check_same_shape("grad_logits", BatchView<const Real>(result.grad_logits), ref);
  if (problem.logits.data != nullptr || problem.logits.batch != 0)
    check_same_shape("logits", problem.logits, ref);
  if (ref.batch == 0) return;
  if (problem.forward_output.data == nullptr || problem.grad_output.data == nullptr ||
      result.grad_logits.data == nullptr || result.status == nullptr ||
      result.iterations == nullptr)
    throw Error("forward_output, grad_output, grad_logits, status and iterations are required");
  if (result.residual_history != nullptr &&
      result.history_stride < history_length(ref.n, precision))
    throw Error("residual_history rows need " + std::to_string(history_length(ref.n, precision)) +
                " entries for n = " + std::to_string(ref.n));

  check_outputs_apart(problem, result);

  if (info_.needs_logits && problem.logits.data == nullptr)
    throw Error("solver '" + name() + "' replays the forward and needs the logits");
  const bool carry = info_.log_base_gradient && carries_log_base_gradient(problem.forward);
  const bool carry_after_cuda = carry && problem.grad_output.n > info_.cuda_carry_max_n;
  if (carry && problem.logits.data == nullptr)
    throw Error("solver '" + name() + "' needs the logits under the forward " +
                describe(problem.forward) +
                ": its base is no scaling of exp(M), so the implicit gradient is carried from "
                "log B to M");

  // The diagnostics come before the solve: relative_residual is NaN-filled here and the CG
  // drivers overwrite it.
  const SolveDiagnostics<Real>& diagnostics = result.diagnostics;
  if (device == Device::cpu) {
    limits::check_thread_count();
    if (!all_in(MemorySpace::host, problem, result))
      throw Error("a solve on the cpu needs every batch in host memory");
    if (diagnostics.any()) store_diagnostics_on_host(problem.forward_output, diagnostics);
    mark_not_written(result);
    if (!carry) {
      behind_exception_boundary(*this, [&] { solve_cpu(problem, result); });
    } else {
      BackwardResult<Real> inner = result;
      std::optional<CarriedIterates<Real>> iterates;
      if (result.iterates != nullptr)
        inner.iterates = &iterates.emplace(result.iterates, problem.logits, problem.forward);
      behind_exception_boundary(*this, [&] { solve_cpu(problem, inner); });
      carry_on_host(problem.logits, problem.forward, result);
    }
    check_solver_output(*this, result);
    return;
  }
  device::require_cuda();
  // Named only where a wait may report an error: a stream-ordered solve builds no string.
  const auto what = [this] { return "solver '" + name() + "' on cuda"; };
  if (all_in(MemorySpace::device, problem, result)) {
    if (diagnostics.any())
      device::store_diagnostics(problem.forward_output, diagnostics, problem.stream);
    if (from_plugin_) device::mark_not_written(result, problem.stream);
    // One reference captured: std::function holds it without allocating.
    const auto run = [&] { solve_cuda(problem, result); };
    behind_exception_boundary(*this, [&run] { run(); });
    if (carry_after_cuda)
      device::carry_to_logits(problem.logits, problem.forward, result, problem.stream);
    if (wait) device::synchronize(what());
    if (!from_plugin_) return;
    BreachReport first;
    device::check_output(result, problem.stream, wait ? &first : nullptr);
    if (first.matrix >= 0) throw Error(breach_message(*this, first.matrix, first.breach));
    return;
  }
  if (!wait) throw Error("a stream-ordered solve on cuda needs every batch in device memory");
  if (!all_in(MemorySpace::host, problem, result))
    throw Error(
        "a solve on cuda needs every batch in host memory (staged through the GPU) or every "
        "batch in device memory, not a mix");
  // Staged: R is on the host already, so the diagnostics are computed there (the same text).
  if (diagnostics.any()) store_diagnostics_on_host(problem.forward_output, diagnostics);
  device::solve_staged<Real>(
      problem, result,
      [this, carry_after_cuda](const BackwardProblem<Real>& p, const BackwardResult<Real>& r) {
        // The device copies start as not written, so that the host check sees what a plugin
        // left unwritten (the copies are otherwise uninitialised).
        if (from_plugin_) device::mark_not_written(r, p.stream);
        behind_exception_boundary(*this, [&] { solve_cuda(p, r); });
        if (carry_after_cuda) device::carry_to_logits(p.logits, p.forward, r, p.stream);
      },
      what());
  check_solver_output(*this, result);
}

template void BackwardSolver::checked_solve(const BackwardProblem<float>&,
                                            const BackwardResult<float>&, Device, bool) const;
template void BackwardSolver::checked_solve(const BackwardProblem<double>&,
                                            const BackwardResult<double>&, Device, bool) const;

}  // namespace sinkgrad
