// The CPU-only example plugin (examples/plugins/neumann), built against the installed package
// without a CUDA compiler and loaded at run time:
//   - at a converged forward its gradient is the plain implicit gradient, checked against a
//     dense solve of the plain Schur system written here in long double;
//   - a NaN matrix gets invalid_input and a NaN gradient, its neighbours are untouched;
//   - it runs on the CPU only, and a cuda solve is refused with a message naming it.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/plugin_loader.hpp"
#include "core/solver_registry.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

using Wide = long double;

template <class Batch>
auto mat(Batch& x, index_t b) {
  return x.data() + b * x.n() * x.n();
}

SolverRegistry& registry_with_neumann() {
  static const bool loaded = (load_plugin(SINKGRAD_TEST_CPU_ONLY_PLUGIN), true);
  (void)loaded;
  return SolverRegistry::global();
}

// dL/dM of the plain system (I - R^T R) beta = s_c - R^T s_r, alpha = s_r - R beta, solved
// densely with the singular direction pinned: (I - R^T R + 1 1^T / n) beta = b.
std::vector<Wide> plain_reference(const double* R, const double* G, int n) {
  std::vector<Wide> s_r(n, 0), b(n, 0), A(static_cast<size_t>(n) * n, 0), beta(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) s_r[i] += Wide(R[i * n + j]) * G[i * n + j];
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) b[j] += Wide(R[i * n + j]) * (G[i * n + j] - s_r[i]);
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < n; ++k) {
      Wide rtr = 0;
      for (int i = 0; i < n; ++i) rtr += Wide(R[i * n + j]) * R[i * n + k];
      A[j * n + k] = (j == k ? 1 : 0) - rtr + Wide(1) / n;
    }
  for (int c = 0; c < n; ++c) {  // Gaussian elimination with partial pivoting
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(A[r * n + c]) > std::fabs(A[p * n + c])) p = r;
    for (int k = 0; k < n; ++k) std::swap(A[c * n + k], A[p * n + k]);
    std::swap(b[c], b[p]);
    for (int r = c + 1; r < n; ++r) {
      const Wide f = A[r * n + c] / A[c * n + c];
      for (int k = c; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
      b[r] -= f * b[c];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    Wide v = b[r];
    for (int k = r + 1; k < n; ++k) v -= A[r * n + k] * beta[k];
    beta[r] = v / A[r * n + r];
  }
  std::vector<Wide> grad(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    Wide alpha = s_r[i];
    for (int j = 0; j < n; ++j) alpha -= Wide(R[i * n + j]) * beta[j];
    for (int j = 0; j < n; ++j)
      grad[i * n + j] = Wide(R[i * n + j]) * (G[i * n + j] - alpha - beta[j]);
  }
  return grad;
}

struct Solved {
  HostBatch<double> grad;
  std::vector<SolveStatus> status;
  std::vector<std::int32_t> iterations;
};

Solved solve(const HostBatch<double>& M, const HostBatch<double>& R, const HostBatch<double>& G,
             int T, int terms) {
  const auto solver = registry_with_neumann().create("neumann", {{"terms", std::to_string(terms)}});
  Solved out{HostBatch<double>(M.batch(), M.n()),
             std::vector<SolveStatus>(static_cast<size_t>(M.batch())),
             std::vector<std::int32_t>(static_cast<size_t>(M.batch()), -1)};
  solver->solve(BackwardProblem<double>{M.view(), R.view(), G.view(), T},
                BackwardResult<double>{out.grad.view(), out.status.data(), out.iterations.data()});
  return out;
}

TEST(NeumannPlugin, ConvergedForwardGivesThePlainImplicitGradient) {
  auto rng = make_rng();
  for (const int n : {2, 3, 4, 8, 16}) {
    const int T = 400;
    const HostBatch<double> M = normal_batch<double>(rng, 6, n, 0.5);
    const HostBatch<double> G = normal_batch<double>(rng, 6, n, 1.0);
    const HostBatch<double> R = forward(M, T);
    const Solved out = solve(M, R, G, T, 300);
    for (index_t b = 0; b < M.batch(); ++b) {
      ASSERT_EQ(out.status[b], SolveStatus::ok) << "n=" << n << " b=" << b;
      EXPECT_EQ(out.iterations[b], 300);
      const std::vector<Wide> ref = plain_reference(mat(R, b), mat(G, b), n);
      Wide diff = 0, size = 0;
      for (int e = 0; e < n * n; ++e) {
        diff += (mat(out.grad, b)[e] - ref[e]) * (mat(out.grad, b)[e] - ref[e]);
        size += ref[e] * ref[e];
      }
      EXPECT_LT(static_cast<double>(std::sqrt(diff / size)), 1e-10) << "n=" << n << " b=" << b;
    }
  }
}

TEST(NeumannPlugin, NanMatrixIsInvalidAndNeighboursAreUntouched) {
  auto rng = make_rng(1);
  const int n = 4, T = 50;
  const HostBatch<double> M = normal_batch<double>(rng, 3, n);
  const HostBatch<double> G = normal_batch<double>(rng, 3, n);
  HostBatch<double> R = forward(M, T);
  mat(R, 1)[5] = std::nan("");
  const Solved out = solve(M, R, G, T, 40);
  EXPECT_EQ(out.status[0], SolveStatus::ok);
  EXPECT_EQ(out.status[1], SolveStatus::invalid_input);
  EXPECT_EQ(out.status[2], SolveStatus::ok);
  for (int e = 0; e < n * n; ++e) {
    EXPECT_TRUE(std::isnan(mat(out.grad, 1)[e]));
    EXPECT_TRUE(std::isfinite(mat(out.grad, 0)[e]));
    EXPECT_TRUE(std::isfinite(mat(out.grad, 2)[e]));
  }
}

TEST(NeumannPlugin, RunsOnTheCpuOnly) {
  const SolverInfo& info = registry_with_neumann().info("neumann");
  ASSERT_EQ(info.devices.size(), 1u);
  EXPECT_EQ(info.devices[0], Device::cpu);
  auto rng = make_rng(2);
  const HostBatch<double> M = normal_batch<double>(rng, 2, 3);
  const HostBatch<double> R = forward(M, 5);
  HostBatch<double> grad(2, 3);
  std::vector<SolveStatus> status(2);
  std::vector<std::int32_t> iterations(2);
  const auto solver = registry_with_neumann().create("neumann");
  try {
    solver->solve(BackwardProblem<double>{M.view(), R.view(), M.view(), 5},
                  BackwardResult<double>{grad.view(), status.data(), iterations.data()},
                  Device::cuda);
    FAIL() << "a cuda solve of a CPU-only plugin was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'neumann' does not run on cuda"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sinkgrad::testing
