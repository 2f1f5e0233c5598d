// The study's iterate errors from the measured solve's own iterates (IterateErrors) equal those
// of one solve per iteration count (iterate_errors_by_resolving), number for number, for both
// CG solvers, non-converged and converged forwards, float32 and float64.

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/solver_registry.hpp"
#include "experiments/study/iterate_errors.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace sinkgrad::study {
namespace {

HostBatch<double> normal(std::mt19937_64& rng, index_t batch, int n, double scale) {
  HostBatch<double> x(batch, n);
  std::normal_distribution<double> draw(0.0, scale);
  for (index_t k = 0; k < x.size(); ++k) x.data()[k] = draw(rng);
  return x;
}

template <class Real>
HostBatch<Real> as(const HostBatch<double>& x) {
  HostBatch<Real> y(x.batch(), x.n());
  for (index_t k = 0; k < x.size(); ++k) y.data()[k] = static_cast<Real>(x.data()[k]);
  return y;
}

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

template <class Real>
void compare(const std::string& solver_name, const std::string& system, int n, int T) {
  SCOPED_TRACE(solver_name + " " + system + " n=" + std::to_string(n) + " T=" + std::to_string(T));
  std::mt19937_64 rng(static_cast<std::uint64_t>(n * 100 + T));
  const index_t batch = 40;
  const HostBatch<double> logits64 = normal(rng, batch, n, 2.0), G64 = normal(rng, batch, n, 1.0);
  // Two references that are not the solve's own result.
  const HostBatch<double> unrolled = normal(rng, batch, n, 0.1),
                          converged = normal(rng, batch, n, 0.1);
  const HostBatch<Real> logits = as<Real>(logits64), G = as<Real>(G64);
  HostBatch<Real> R(batch, n);
  sinkhorn_forward<Real>(logits.view(), T, R.view(), nullptr, Device::cpu, ForwardSpec{});

  RunSpec run;
  run.T = T;
  run.solver = solver_name;
  run.options = {{"max_iterations", std::to_string(2 * n)}};
  if (!system.empty()) run.options["system"] = system;
  const auto& registry = SolverRegistry::global();
  const auto solver = registry.create(run.solver, run.options);
  const BackwardProblem<Real> problem{logits.view(), R.view(), G.view(), T};
  const int stride = solver->history_length(n, precision_of<Real>());
  std::vector<Real> history(static_cast<std::size_t>(batch * stride));
  HostBatch<Real> gradient(batch, n);
  std::vector<SolveStatus> status(static_cast<std::size_t>(batch));
  std::vector<std::int32_t> iterations(static_cast<std::size_t>(batch));
  IterateErrors<Real> iterates(stride - 1, unrolled, converged);
  BackwardResult<Real> result{gradient.view(), status.data(), iterations.data(), history.data(),
                              stride};
  result.iterates = &iterates;
  solver->solve(problem, result);
  int used = 0;
  for (const auto k : iterations) used = std::max(used, static_cast<int>(k));
  ASSERT_GT(used, 1);

  RunRecord from_iterates, from_resolves;
  iterates.summarise(gradient.view(), iterations.data(), used, from_iterates);
  iterate_errors_by_resolving<Real>(registry, run, problem, used, unrolled, converged,
                                    from_resolves);
  ASSERT_EQ(from_iterates.iterate_error_unrolled_median.size(), static_cast<std::size_t>(used));
  EXPECT_TRUE(same(from_iterates.iterate_error_unrolled_median,
                   from_resolves.iterate_error_unrolled_median));
  EXPECT_TRUE(same(from_iterates.iterate_error_converged_median,
                   from_resolves.iterate_error_converged_median));
}

TEST(IterateErrors, FromTheSolvesOwnIteratesAsFromResolving) {
  for (const int n : {4, 8, 13})
    for (const int T : {1, 5, 60}) {
      compare<double>("cg_corrected", "", n, T);
      compare<float>("cg_corrected", "", n, T);
      compare<double>("cg_plain", "schur", n, T);
      compare<float>("cg_plain", "block", n, T);
    }
}

// The record of every iterate is K x B pairs of doubles; a run whose record would not fit
// scores by re-solving instead.
TEST(IterateErrors, FitsOnlyWithinItsMemory) {
  EXPECT_TRUE(IterateErrors<double>::fits(64, index_t(1) << 16));  // 64 MiB
  EXPECT_TRUE(IterateErrors<float>::fits(2048, 8192));             // 256 MiB
  EXPECT_FALSE(IterateErrors<float>::fits(2049, 8192));
  EXPECT_FALSE(IterateErrors<double>::fits(1000000, 4096));  // 61 GiB
  EXPECT_FALSE(IterateErrors<double>::fits(1000000, index_t(1) << 40));
  EXPECT_FALSE(IterateErrors<double>::fits(0, 10));
}

}  // namespace
}  // namespace sinkgrad::study
