#include "cli/demo_report.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>

#include "cli/text_format.hpp"
#include "core/solver_registry.hpp"
#include "experiments/study/solve_checked.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace sinkgrad::cli {
namespace {

// The solvers and systems compared; the first is the reference.
struct Variant {
  std::string label;
  std::string solver;
  std::map<std::string, std::string> options;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> list{
      {"unrolled", "unrolled", {}},
      {"cg_plain schur", "cg_plain", {{"system", "schur"}}},
      {"cg_plain block", "cg_plain", {{"system", "block"}}},
      {"cg_corrected", "cg_corrected", {}},
      {"direct corrected", "direct", {{"system", "corrected"}}},
      {"direct plain", "direct", {{"system", "plain"}}},
      {"auto", "auto", {}},
  };
  return list;
}

// Each solve is timed as the best of a few runs: on a busy machine single runs are noisy.
constexpr int timing_repeats = 3;

template <class Real>
struct Solved {
  HostBatch<Real> grad;
  std::vector<SolveStatus> status;
  std::vector<std::int32_t> iterations;
  double milliseconds = 0;
};

template <class Real>
Solved<Real> solve(const BackwardSolver& solver, const HostBatch<Real>& M, const HostBatch<Real>& R,
                   const HostBatch<Real>& G, int T, const ForwardSpec& forward) {
  const auto batch = static_cast<size_t>(M.batch());
  Solved<Real> out{HostBatch<Real>(M.batch(), M.n()), std::vector<SolveStatus>(batch),
                   std::vector<std::int32_t>(batch), 0};
  out.milliseconds = std::numeric_limits<double>::infinity();
  for (int repeat = 0; repeat < timing_repeats; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    study::solve_checked(
        solver, BackwardProblem<Real>{M.view(), R.view(), G.view(), T, forward},
        BackwardResult<Real>{out.grad.view(), out.status.data(), out.iterations.data()},
        Device::cpu, "n = " + std::to_string(M.n()) + ", T = " + std::to_string(T));
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    out.milliseconds = std::min(out.milliseconds, elapsed.count());
  }
  return out;
}

// ||a_b - ref_b||_F / ||ref_b||_F for matrix b, in double.
template <class Real>
double relative_error(const HostBatch<Real>& a, const HostBatch<Real>& ref, index_t b) {
  const index_t size = index_t(a.n()) * a.n();
  const Real* x = a.data() + b * size;
  const Real* y = ref.data() + b * size;
  double diff = 0, norm = 0;
  for (index_t k = 0; k < size; ++k) {
    diff += (double(x[k]) - double(y[k])) * (double(x[k]) - double(y[k]));
    norm += double(y[k]) * double(y[k]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return 0.5 * (upper + *std::max_element(values.begin(),
                                          values.begin() + static_cast<std::ptrdiff_t>(mid)));
}

std::string count_text(const std::vector<SolveStatus>& status, SolveStatus which) {
  return std::to_string(std::count(status.begin(), status.end(), which));
}

template <class Real>
void run_size(const DemoSettings& settings, int n,
              const std::vector<std::unique_ptr<BackwardSolver>>& solvers) {
  std::seed_seq seq{settings.seed, std::uint64_t(n)};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> uniform(0, settings.scale);
  std::normal_distribution<double> normal(0, 1);
  HostBatch<Real> M(settings.batch, n), G(settings.batch, n);
  for (index_t k = 0; k < M.size(); ++k) M.data()[k] = static_cast<Real>(uniform(rng));
  for (index_t k = 0; k < G.size(); ++k) G.data()[k] = static_cast<Real>(normal(rng));

  for (int T : settings.iterations) {
    HostBatch<Real> R(settings.batch, n);
    std::vector<Real> violation(static_cast<size_t>(settings.batch));
    sinkhorn_forward<Real>(M.view(), T, R.view(), violation.data(), Device::cpu, settings.forward);
    double worst = 0;
    for (Real v : violation) worst = std::max(worst, double(v));
    // The default forward's line is unchanged; another names its convention and inexact side.
    const bool rows_inexact = last_step_normalises_columns(settings.forward.convention);
    std::cout << "n = " << n << ", T = " << T << ": forward "
              << (is_default_forward(settings.forward) ? "" : describe(settings.forward) + " ")
              << "max|" << (rows_inexact ? "r" : "c") << " - 1| = " << scientific(worst) << "\n";

    TextTable table({{"solver", TextTable::Align::left},
                     {"median rel err"},
                     {"max rel err"},
                     {"ok"},
                     {"not conv"},
                     {"breakdown"},
                     {"invalid"},
                     {"ill cond"},
                     {"fallback"},
                     {"iters"},
                     {"ms"}});
    std::vector<Solved<Real>> results;
    for (const auto& solver : solvers)
      results.push_back(solve(*solver, M, R, G, T, settings.forward));
    const Solved<Real>& reference = results.front();
    for (size_t v = 0; v < solvers.size(); ++v) {
      const Solved<Real>& result = results[v];
      std::vector<double> errors;
      for (index_t b = 0; b < settings.batch; ++b) {
        const auto i = static_cast<size_t>(b);
        const bool usable =
            reference.status[i] == SolveStatus::ok &&
            (is_success(result.status[i]) || result.status[i] == SolveStatus::not_converged);
        if (usable) errors.push_back(relative_error(result.grad, reference.grad, b));
      }
      const double max_error =
          errors.empty() ? std::nan("") : *std::max_element(errors.begin(), errors.end());
      const double mean_iterations =
          static_cast<double>(std::accumulate(result.iterations.begin(), result.iterations.end(),
                                              std::int64_t(0))) /
          static_cast<double>(std::max<index_t>(settings.batch, 1));
      table.add_row({variants()[v].label, v == 0 ? "reference" : scientific(median(errors)),
                     v == 0 ? "reference" : scientific(max_error),
                     count_text(result.status, SolveStatus::ok),
                     count_text(result.status, SolveStatus::not_converged),
                     count_text(result.status, SolveStatus::breakdown),
                     count_text(result.status, SolveStatus::invalid_input),
                     count_text(result.status, SolveStatus::ill_conditioned),
                     count_text(result.status, SolveStatus::fallback), fixed(mean_iterations, 1),
                     fixed(result.milliseconds, 2)});
    }
    std::cout << table.render(2) << "\n";
  }
}

std::string legend() {
  const int indent = 18;
  return "Legend\n" +
         hanging("max|c - 1|",
                 "largest column-sum violation of the forward over the batch (rows sum to 1 "
                 "after its last step, columns only once it has converged)",
                 indent) +
         hanging("rel err",
                 "per matrix ||dL/dM - dL/dM_unrolled||_F / ||dL/dM_unrolled||_F; median and "
                 "max over the matrices the solver did not fail on (status ok, not conv or "
                 "fallback)",
                 indent) +
         hanging("ok ... fallback",
                 "matrices per status (core/status.hpp): solved; CG stopped at max_iterations "
                 "(last iterate used); CG breakdown or singular system; invalid input; an "
                 "eigenvalue within rounding of direct plain's cut that changes the gradient; "
                 "auto's exact unrolled gradient where its implicit solve failed or the forward "
                 "was too far from converged",
                 indent) +
         hanging("iters", "mean iterations per matrix (CG steps; T for unrolled; 0 for direct)",
                 indent) +
         hanging("ms",
                 "wall time of the backward solve of the whole batch on the CPU (best of " +
                     std::to_string(timing_repeats) + " runs)",
                 indent) +
         "\n" +
         wrap(
             "unrolled is the exact derivative of the T-step forward. The implicit solvers "
             "assume a converged forward (cg_plain, direct plain: r = c = 1) or use its actual "
             "marginals (cg_corrected, direct corrected); both approach unrolled as the forward "
             "converges (T large).",
             0);
}

template <class Real>
void run_demo_in(const DemoSettings& settings) {
  std::vector<std::unique_ptr<BackwardSolver>> solvers;
  for (const Variant& variant : variants())
    solvers.push_back(SolverRegistry::global().create(variant.solver, variant.options));
  std::cout << "sinkgrad demo: " << settings.batch << " random matrices per size n; logits ~ "
            << "uniform(0, " << settings.scale << "), grad_output ~ normal(0, 1); "
            << to_string(settings.precision) << " on the CPU, " << omp_get_max_threads()
            << " threads; seed " << settings.seed << " (repeat with --seed " << settings.seed
            << ")\n\n";
  for (int n : settings.sizes) run_size<Real>(settings, n, solvers);
  std::cout << legend();
}

}  // namespace

void run_demo(const DemoSettings& settings) {
  if (settings.precision == Precision::float32)
    run_demo_in<float>(settings);
  else
    run_demo_in<double>(settings);
}

}  // namespace sinkgrad::cli
