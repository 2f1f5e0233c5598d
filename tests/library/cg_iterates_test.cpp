// CG's iterates handed to BackwardResult::iterates (the CPU CG solvers' monitor): the gradient
// reported for iteration k is, bit for bit, the gradient of the same solve stopped after k
// iterations (max_iterations = k), which is what a study scores; recording them changes neither
// the solve's gradient nor its residual history.

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

// Every reported gradient, by matrix and iteration.
template <class Real>
class RecordedIterates final : public IterateSink<Real> {
 public:
  explicit RecordedIterates(int n) : size_(static_cast<std::size_t>(n) * n) {}
  void gradient(index_t b, int k, const Real* g) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = seen.try_emplace({b, k}, g, g + size_);
    if (!fresh) ++repeated;
  }
  std::map<std::pair<index_t, int>, std::vector<Real>> seen;
  int repeated = 0;

 private:
  std::size_t size_;
  std::mutex mutex_;
};

template <class Real>
void check_iterates(const SolverConfig& config, int n, int T, double scale, ForwardSpec spec) {
  SCOPED_TRACE(config.label() + " n=" + std::to_string(n) + " T=" + std::to_string(T) +
               " scale=" + std::to_string(scale) + " " + std::string(to_string(spec.convention)));
  auto rng = make_rng(static_cast<std::uint64_t>(n * 1000 + T * 10) + sizeof(Real));
  const index_t batch = 16;
  const auto logits = normal_batch<Real>(rng, batch, n, scale);
  auto G = normal_batch<Real>(rng, batch, n, 1.0);
  // Copied streams: G constant along the rows of matrix 0, whose true gradient is zero.
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) G(0, i, j) = G(0, i, 0);
  HostBatch<Real> R(batch, n);
  sinkhorn_forward<Real>(logits.view(), T, R.view(), nullptr, Device::cpu, spec);

  const int K = 2 * n + 3;
  SolverConfig capped = config;
  capped.options["max_iterations"] = std::to_string(K);
  const auto solver = capped.create();
  ASSERT_TRUE(solver->reports_iterates(Device::cpu));
  const Solution<Real> plain = solve<Real>(*solver, logits, R, G, T, true, spec);

  RecordedIterates<Real> iterates(n);
  Solution<Real> watched;
  watched.grad = HostBatch<Real>(batch, n);
  watched.status.assign(static_cast<std::size_t>(batch), SolveStatus::ok);
  watched.iterations.assign(static_cast<std::size_t>(batch), -1);
  watched.history_stride = plain.history_stride;
  watched.history.assign(plain.history.size(), Real(0));
  BackwardProblem<Real> problem{logits.view(), R.view(), G.view(), T, spec};
  BackwardResult<Real> result{watched.grad.view(), watched.status.data(), watched.iterations.data(),
                              watched.history.data(), watched.history_stride};
  result.iterates = &iterates;
  solver->solve(problem, result);

  const int nn = n * n;
  ASSERT_TRUE(same_bits(plain.grad.data(), watched.grad.data(), int(batch) * nn));
  ASSERT_TRUE(same_bits(plain.history.data(), watched.history.data(),
                        static_cast<int>(plain.history.size())));
  EXPECT_EQ(plain.status, watched.status);
  EXPECT_EQ(plain.iterations, watched.iterations);
  EXPECT_EQ(iterates.repeated, 0);

  int checked = 0;
  for (int k = 1; k <= K; ++k) {
    SolverConfig stopped = config;
    stopped.options["max_iterations"] = std::to_string(k);
    const Solution<Real> at_k = solve<Real>(*stopped.create(), logits, R, G, T, false, spec);
    for (index_t b = 0; b < batch; ++b) {
      const auto found = iterates.seen.find({b, k});
      const int done = plain.iterations[static_cast<std::size_t>(b)];
      // Reported for every iteration performed, and only for those.
      ASSERT_EQ(found != iterates.seen.end(), k <= done) << "matrix " << b << " k " << k;
      if (k >= done) continue;  // the solve stopped by itself: its own gradient
      EXPECT_TRUE(same_bits(found->second.data(), at_k.grad.data() + b * nn, nn))
          << "matrix " << b << " iteration " << k;
      ++checked;
    }
  }
  // n = 2: the corrected system has rank one, and CG ends after its first step.
  if (n > 2) {
    EXPECT_GT(checked, 0);
  }
}

TEST(CgIterates, EveryIterateIsTheSolveStoppedThere) {
  const std::vector<SolverConfig> configs = {
      {"cg_corrected", {}},
      {"cg_corrected", {{"project", "false"}}},
      {"cg_plain", {{"system", "schur"}}},
      {"cg_plain", {{"system", "block"}}},
      {"cg_plain", {{"system", "schur"}, {"project", "false"}}}};
  const std::vector<ForwardSpec> specs = {{ForwardConvention::columns_first, 0.0},
                                          {ForwardConvention::rows_first, 0.0},
                                          {ForwardConvention::tilekernels, 1e-6}};
  for (const auto& config : configs)
    for (const auto& spec : specs)
      for (const int n : {2, 3, 4, 7, 16})
        for (const int T : {1, 3}) {
          check_iterates<double>(config, n, T, 2.0, spec);
          check_iterates<float>(config, n, T, 1.0, spec);
        }
  check_iterates<double>({"cg_corrected", {}}, 33, 2, 3.0, {});
}

TEST(CgIterates, OnlyTheCpuCgSolversReportThem) {
  for (const auto& config : all_solver_configs()) {
    const bool cg = config.name.rfind("cg_", 0) == 0;
    EXPECT_EQ(config.create()->reports_iterates(Device::cpu), cg) << config.label();
    EXPECT_FALSE(config.create()->reports_iterates(Device::cuda)) << config.label();
  }
}

TEST(CgIterates, RefusedWhereTheGradientOverwritesTheInputs) {
  auto rng = make_rng(7);
  const auto logits = normal_batch<double>(rng, 2, 4, 1.0);
  HostBatch<double> R(2, 4);
  sinkhorn_forward<double>(logits.view(), 3, R.view(), nullptr, Device::cpu, {});
  auto G = normal_batch<double>(rng, 2, 4, 1.0);
  std::vector<SolveStatus> status(2);
  std::vector<std::int32_t> iterations(2);
  RecordedIterates<double> iterates(4);
  BackwardResult<double> result{G.view(), status.data(), iterations.data()};
  result.iterates = &iterates;
  const auto solver = SolverRegistry::global().create("cg_corrected", {});
  EXPECT_THROW(solver->solve(BackwardProblem<double>{logits.view(), R.view(), G.view(), 3}, result),
               Error);
}

}  // namespace
}  // namespace sinkgrad::testing
