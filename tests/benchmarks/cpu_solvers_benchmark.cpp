// CPU throughput of the forward and of every backward solver (Google Benchmark).
//
// B = 65536 matrices, n in {4, 8, 16}, T = 20, float32 and float64, logits uniform(0, 4) and
// G standard normal from a fixed seed. Reported per benchmark:
//   items_per_second  matrices per second
//   bytes_per_second  the bytes that must move once: the implicit solvers read R and G and
//                     write dL/dM (3 B n^2 values); unrolled reads M and G and writes dL/dM
//                     (it replays the forward from M and never reads R: also 3 B n^2); the
//                     forward reads M and writes R (2 B n^2)
//   cg_iterations     mean CG iterations per matrix (CG solvers)
//   ok_fraction       fraction of matrices with status ok
// Wall-clock time (UseRealTime): the batch loop runs on every OpenMP thread, so the CPU-time
// column (the main thread's) means little. On a shared machine run repetitions and read the
// medians (docs/benchmarks-cpu.md has the command and the figures).
//
//   build-tests/bin/sinkgrad_bench_cpu --benchmark_min_time=0.5
//   build-tests/bin/sinkgrad_bench_cpu --benchmark_filter='cg_corrected/float32'

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace {

using sinkgrad::HostBatch;
using sinkgrad::index_t;

constexpr index_t batch_size = 65536;
constexpr int forward_iterations = 20;

// Inputs and outputs of one (precision, n), built once and kept for every benchmark using them.
template <class Real>
struct Workload {
  HostBatch<Real> M, R, G, grad;
  std::vector<sinkgrad::SolveStatus> status;
  std::vector<std::int32_t> iterations;

  explicit Workload(int n)
      : M(batch_size, n),
        R(batch_size, n),
        G(batch_size, n),
        grad(batch_size, n),
        status(batch_size),
        iterations(batch_size) {
    std::mt19937_64 rng(20240 + static_cast<unsigned>(n));
    std::uniform_real_distribution<double> logits(0.0, 4.0);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (index_t k = 0; k < M.size(); ++k) {
      M.data()[k] = static_cast<Real>(logits(rng));
      G.data()[k] = static_cast<Real>(normal(rng));
    }
    sinkgrad::sinkhorn_forward<Real>(M.view(), forward_iterations, R.view(), nullptr);
  }

  static Workload& get(int n) {
    static std::map<int, std::unique_ptr<Workload>> cache;
    auto& entry = cache[n];
    if (!entry) entry = std::make_unique<Workload>(n);
    return *entry;
  }
};

template <class Real>
double matrix_bytes(int n) {
  return static_cast<double>(batch_size) * n * n * sizeof(Real);
}

template <class Real>
void forward_benchmark(benchmark::State& state, int n) {
  auto& w = Workload<Real>::get(n);
  for (auto _ : state) {
    sinkgrad::sinkhorn_forward<Real>(w.M.view(), forward_iterations, w.R.view(), nullptr);
    benchmark::DoNotOptimize(w.R.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * matrix_bytes<Real>(n)));
}

template <class Real>
void solver_benchmark(benchmark::State& state, std::string name,
                      std::map<std::string, std::string> options, int n) {
  auto& w = Workload<Real>::get(n);
  const auto solver = sinkgrad::SolverRegistry::global().create(name, options);
  sinkgrad::BackwardProblem<Real> problem{w.M.view(), w.R.view(), w.G.view(), forward_iterations};
  sinkgrad::BackwardResult<Real> result;
  result.grad_logits = w.grad.view();
  result.status = w.status.data();
  result.iterations = w.iterations.data();
  for (auto _ : state) {
    solver->solve(problem, result);
    benchmark::DoNotOptimize(w.grad.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * matrix_bytes<Real>(n)));
  double ok = 0, cg_iterations = 0;
  for (index_t b = 0; b < batch_size; ++b) {
    ok += w.status[b] == sinkgrad::SolveStatus::ok ? 1 : 0;
    cg_iterations += w.iterations[b];
  }
  state.counters["ok_fraction"] = ok / double(batch_size);
  if (name.rfind("cg_", 0) == 0)
    state.counters["cg_iterations"] = cg_iterations / double(batch_size);
}

struct Config {
  std::string label;  // benchmark name prefix
  std::string name;
  std::map<std::string, std::string> options;
};

template <class Real>
void register_all(const char* precision) {
  const std::vector<Config> configs = {
      {"unrolled", "unrolled", {}},
      {"cg_plain_schur", "cg_plain", {{"system", "schur"}}},
      {"cg_plain_block", "cg_plain", {{"system", "block"}}},
      {"cg_corrected", "cg_corrected", {}},
      {"direct_corrected", "direct", {{"system", "corrected"}}},
      {"direct_plain", "direct", {{"system", "plain"}}},
  };
  for (int n : {4, 8, 16}) {
    const std::string suffix = std::string("/") + precision + "/n:" + std::to_string(n);
    benchmark::RegisterBenchmark(("forward" + suffix).c_str(), forward_benchmark<Real>, n)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (const auto& c : configs)
      benchmark::RegisterBenchmark((c.label + suffix).c_str(), solver_benchmark<Real>, c.name,
                                   c.options, n)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all<float>("float32");
  register_all<double>("float64");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
