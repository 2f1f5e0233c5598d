// `sinkgrad demo`: the built-in demonstration. On random batches it runs the forward for a
// few T and prints, per (n, T), how far each backward solver's dL/dM is from the exact
// derivative of the T-step forward (`unrolled`), with status counts and timings.

#include <omp.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "core/solver_registry.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/cli/text_format.hpp"
#include "experiments/io/memory_budget.hpp"
#include "experiments/study/solver_contract.hpp"
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
  };
  return list;
}

// Each solve is timed as the best of a few runs: on a busy machine single runs are noisy.
constexpr int timing_repeats = 3;

struct DemoSettings {
  index_t batch = 512;
  std::vector<int> sizes;
  std::vector<int> iterations;
  double scale = 4;
  Precision precision = Precision::float64;
  std::uint64_t seed = 0;
  ForwardSpec forward;
};

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
            (result.status[i] == SolveStatus::ok || result.status[i] == SolveStatus::not_converged);
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
                     fixed(mean_iterations, 1), fixed(result.milliseconds, 2)});
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
                 "max over the matrices the solver did not fail on (status ok or not conv)",
                 indent) +
         hanging("ok ... ill cond",
                 "matrices per status (core/status.hpp): solved; CG stopped at max_iterations "
                 "(last iterate used); CG breakdown or singular system; invalid input; an "
                 "eigenvalue within rounding of direct plain's cut that changes the gradient",
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
void run_demo(const DemoSettings& settings) {
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

template <class T>
void require_at_least(const std::vector<T>& values, T minimum, const char* option) {
  for (T value : values)
    if (value < minimum)
      throw UsageError(std::string(option) + " values must be >= " + std::to_string(minimum) +
                       ", got " + std::to_string(value));
}

// boost would read "-1" as 2^64 - 1: a seed is decimal digits only.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (text.empty() || text.front() == '-' || error != std::errc() ||
      end != text.data() + text.size())
    throw UsageError("--seed must be an integer from 0 to 18446744073709551615, got '" + text +
                     "'");
  return seed;
}

int run_demo_command(const po::variables_map& values) {
  DemoSettings settings;
  const long long batch = values["batch"].as<long long>();
  if (batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(batch));
  settings.batch = batch;
  settings.sizes = values["sizes"].as<std::vector<int>>();
  settings.iterations = values["iterations"].as<std::vector<int>>();
  require_at_least(settings.sizes, 1, "--sizes");
  require_at_least(settings.iterations, 1, "--iterations");
  for (const int T : settings.iterations)
    if (T > 1000000)
      throw UsageError("--iterations values must be <= 1000000, got " + std::to_string(T));
  settings.scale = values["scale"].as<double>();
  if (!(settings.scale >= 0) || !std::isfinite(settings.scale))
    throw UsageError("--scale must be a finite number >= 0");
  try {
    settings.precision = parse_precision(values["dtype"].as<std::string>());
  } catch (const Error& error) {
    throw UsageError(std::string("--dtype: ") + error.what());
  }
  try {
    std::optional<double> eps;
    if (values.count("eps")) eps = values["eps"].as<double>();
    settings.forward = make_forward_spec(values["forward"].as<std::string>(), eps);
  } catch (const Error& error) {
    throw UsageError(std::string("--forward/--eps: ") + error.what());
  }
  settings.seed = values.count("seed")
                      ? parse_seed(values["seed"].as<std::string>())
                      : (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  // Before the header is printed: M, G, R and the six solvers' gradients per size.
  const std::uint64_t real = settings.precision == Precision::float32 ? 4 : 8;
  for (const int n : settings.sizes)
    require_memory(
        MemoryEstimate()
            .batches(9, settings.batch, n, real)
            .add(static_cast<std::uint64_t>(settings.batch), 6 * 8 + real)
            .add(static_cast<std::uint64_t>(omp_get_max_threads()),
                 16 * real * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n)),
        "demo with --batch " + std::to_string(settings.batch) + " and n = " + std::to_string(n));
  if (settings.precision == Precision::float32)
    run_demo<float>(settings);
  else
    run_demo<double>(settings);
  return exit_ok;
}

}  // namespace

Command make_demo_command() {
  Command command;
  command.name = "demo";
  command.summary =
      "Compare the solvers' gradients on random matrices: error against the exact (unrolled) "
      "derivative, status counts and time, for a few sizes n and forward iterations T.";
  command.usage =
      "[--seed S] [--batch B] [--sizes n ...] [--iterations T ...] [--scale s] "
      "[--dtype float32|float64] [--forward NAME [--eps X]]";
  command.description =
      "Runs on the CPU in a few seconds. Same seed, same matrices: the seed is printed so that "
      "a run can be repeated.";
  command.add_options = [](po::options_description& options) {
    options.add_options()  //
        ("seed", po::value<std::string>()->value_name("S"),
         "random seed (default: a fresh one, printed)")  //
        ("batch", po::value<long long>()->default_value(512)->value_name("B"),
         "random matrices per size")  //
        ("sizes", po::value<std::vector<int>>()->multitoken()->default_value({4, 8}, "4 8"),
         "matrix sizes n")  //
        ("iterations",
         po::value<std::vector<int>>()->multitoken()->default_value({2, 5, 20, 100}, "2 5 20 100"),
         "forward iterations T")  //
        ("scale", po::value<double>()->default_value(4.0)->value_name("s"),
         "logits ~ uniform(0, s)")  //
        ("dtype", po::value<std::string>()->default_value("float64")->value_name("float32|float64"),
         "precision")  //
        ("forward", po::value<std::string>()->default_value("columns_first")->value_name("NAME"),
         "forward convention: columns_first, rows_first or tilekernels (see 'grad --help')")  //
        ("eps", po::value<double>()->value_name("X"),
         "the forward's eps, finite and >= 0 (default 0; 1e-6 for tilekernels)");
  };
  command.run = run_demo_command;
  return command;
}

}  // namespace sinkgrad::cli
