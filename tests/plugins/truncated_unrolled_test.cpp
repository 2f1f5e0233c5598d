// The example plugin's gradient, loaded from the library built against the installed package:
//   - k >= T is the built-in `unrolled` gradient (and k is clamped to T);
//   - small k against a truncated autograd tape of the direct (exp, then divide) forward,
//     written here in long double, and against central finite differences of the truncated
//     map M -> Sinkhorn_k(exp(M) ⊙ S) with the scaling S of the first T - k steps held fixed;
//   - the residual history holds the size of each reverse step's contribution;
//   - bad input gives a per-matrix status; the CUDA variant matches the CPU one.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#if defined(SINKGRAD_WITH_CUDA)
#include "kernels/cuda/device_memory.hpp"
#endif

#include "core/plugin_loader.hpp"
#include "core/solver_registry.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

using Wide = long double;
using Square = std::vector<Wide>;

// The global registry with the example plugin loaded (once per process).
SolverRegistry& registry_with_plugin() {
  load_plugin(SINKGRAD_TEST_EXAMPLE_PLUGIN);
  return SolverRegistry::global();
}

std::unique_ptr<BackwardSolver> truncated(int k) {
  return registry_with_plugin().create("truncated_unrolled", {{"k", std::to_string(k)}});
}

template <class Real>
struct Solved {
  HostBatch<Real> grad;
  std::vector<SolveStatus> status;
  std::vector<std::int32_t> iterations;
  std::vector<Real> history;
  int stride = 0;
};

template <class Real>
Solved<Real> solve_cpu(const BackwardSolver& solver, const HostBatch<Real>& M,
                       const HostBatch<Real>& G, int T) {
  const HostBatch<Real> R = forward(M, T);
  Solved<Real> out{HostBatch<Real>(M.batch(), M.n()),
                   std::vector<SolveStatus>(static_cast<size_t>(M.batch())),
                   std::vector<std::int32_t>(static_cast<size_t>(M.batch()), -1),
                   {},
                   solver.history_length(M.n(), precision_of<Real>())};
  out.history.assign(static_cast<size_t>(M.batch() * out.stride), Real(-1));
  BackwardResult<Real> result{out.grad.view(), out.status.data(), out.iterations.data(),
                              out.history.data(), out.stride};
  solver.solve(BackwardProblem<Real>{M.view(), R.view(), G.view(), T}, result);
  return out;
}

// The direct forward, T - k steps, as one scaling matrix S = X_{T-k} ⊘ exp(M).
Square held_scaling(const Square& M, int n, int steps) {
  Square X(M.size());
  for (size_t e = 0; e < M.size(); ++e) X[e] = std::exp(M[e]);
  for (int t = 0; t < steps; ++t) {
    for (int j = 0; j < n; ++j) {
      Wide s = 0;
      for (int i = 0; i < n; ++i) s += X[i * n + j];
      for (int i = 0; i < n; ++i) X[i * n + j] /= s;
    }
    for (int i = 0; i < n; ++i) {
      Wide s = 0;
      for (int j = 0; j < n; ++j) s += X[i * n + j];
      for (int j = 0; j < n; ++j) X[i * n + j] /= s;
    }
  }
  for (size_t e = 0; e < M.size(); ++e) X[e] /= std::exp(M[e]);
  return X;
}

// Sinkhorn_k(exp(M) ⊙ S) and, when wanted, its tape (Y_t after columns, X_t after rows, and
// the normalisers), for the reverse mode below.
struct Tape {
  std::vector<Square> Y, X;
  std::vector<std::vector<Wide>> col_sums, row_sums;
};

Square truncated_map(const Square& M, const Square& S, int n, int k, Tape* tape) {
  Square X(M.size());
  for (size_t e = 0; e < M.size(); ++e) X[e] = std::exp(M[e]) * S[e];
  if (tape) tape->X.push_back(X);
  for (int t = 0; t < k; ++t) {
    std::vector<Wide> cs(n, 0), rs(n, 0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) cs[j] += X[i * n + j];
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) X[i * n + j] /= cs[j];
    if (tape) tape->Y.push_back(X);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) rs[i] += X[i * n + j];
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) X[i * n + j] /= rs[i];
    if (tape) {
      tape->X.push_back(X);
      tape->col_sums.push_back(cs);
      tape->row_sums.push_back(rs);
    }
  }
  return X;
}

// Reverse mode through the k stored steps with the textbook adjoints of the divisions
// (MATH.md), then dM = X_0 ⊙ dX_0 since X_0 = exp(M) ⊙ S with S held constant.
Square truncated_tape_gradient(const Square& M, const Square& G, int n, int T, int k) {
  const Square S = held_scaling(M, n, T - k);
  Tape tape;
  truncated_map(M, S, n, k, &tape);
  Square d = G;
  for (int t = k - 1; t >= 0; --t) {
    const Square& Xt = tape.X[t + 1];
    Square dY(d.size());
    for (int i = 0; i < n; ++i) {
      Wide inner = 0;
      for (int j = 0; j < n; ++j) inner += d[i * n + j] * Xt[i * n + j];
      for (int j = 0; j < n; ++j) dY[i * n + j] = (d[i * n + j] - inner) / tape.row_sums[t][i];
    }
    const Square& Yt = tape.Y[t];
    for (int j = 0; j < n; ++j) {
      Wide inner = 0;
      for (int i = 0; i < n; ++i) inner += dY[i * n + j] * Yt[i * n + j];
      for (int i = 0; i < n; ++i) d[i * n + j] = (dY[i * n + j] - inner) / tape.col_sums[t][j];
    }
  }
  for (size_t e = 0; e < d.size(); ++e) d[e] *= tape.X[0][e];
  return d;
}

// Central differences of <G, Sinkhorn_k(exp(M) ⊙ S)> with S held.
Square truncated_finite_differences(const Square& M, const Square& G, int n, int T, int k) {
  const Square S = held_scaling(M, n, T - k);
  const Wide h = 1e-5L;
  Square grad(M.size());
  for (size_t e = 0; e < M.size(); ++e) {
    Wide loss[2];
    for (int side = 0; side < 2; ++side) {
      Square shifted = M;
      shifted[e] += side == 0 ? h : -h;
      const Square R = truncated_map(shifted, S, n, k, nullptr);
      loss[side] = 0;
      for (size_t q = 0; q < R.size(); ++q) loss[side] += G[q] * R[q];
    }
    grad[e] = (loss[0] - loss[1]) / (2 * h);
  }
  return grad;
}

template <class Real>
Square matrix_of(const HostBatch<Real>& batch, index_t b) {
  const Real* x = batch.data() + b * batch.n() * batch.n();
  return Square(x, x + batch.n() * batch.n());
}

template <class A, class B>
double relative_error(const A& a, const B& b) {
  Wide diff = 0, norm = 0;
  for (size_t e = 0; e < b.size(); ++e) {
    diff += (Wide(a[e]) - Wide(b[e])) * (Wide(a[e]) - Wide(b[e]));
    norm += Wide(b[e]) * Wide(b[e]);
  }
  return static_cast<double>(std::sqrt(diff / norm));
}

TEST(TruncatedUnrolled, AllStepsIsTheUnrolledGradient) {
  auto rng = make_rng(1);
  const auto unrolled = registry_with_plugin().create("unrolled");
  for (int n : {3, 8})
    for (int T : {1, 4, 15}) {
      const auto M = normal_batch<double>(rng, 16, n, 1.5);
      const auto G = normal_batch<double>(rng, 16, n);
      const auto exact = solve_cpu(*unrolled, M, G, T);
      for (int k : {T, T + 7}) {  // k > T differentiates all T steps
        const auto mine = solve_cpu(*truncated(k), M, G, T);
        for (index_t b = 0; b < M.batch(); ++b) {
          EXPECT_EQ(mine.status[b], SolveStatus::ok);
          EXPECT_EQ(mine.iterations[b], T);
          EXPECT_LT(relative_error(matrix_of(mine.grad, b), matrix_of(exact.grad, b)), 1e-12)
              << "n=" << n << " T=" << T << " k=" << k << " b=" << b;
        }
      }
    }
}

TEST(TruncatedUnrolled, MatchesATruncatedTapeOfTheDirectForward) {
  auto rng = make_rng(2);
  for (int n : {2, 5})
    for (int k : {1, 2, 3}) {
      const int T = 6;
      const auto M = normal_batch<double>(rng, 8, n, 1.0);
      const auto G = normal_batch<double>(rng, 8, n);
      const auto mine = solve_cpu(*truncated(k), M, G, T);
      for (index_t b = 0; b < M.batch(); ++b) {
        EXPECT_EQ(mine.iterations[b], k);
        const Square reference = truncated_tape_gradient(matrix_of(M, b), matrix_of(G, b), n, T, k);
        EXPECT_LT(relative_error(matrix_of(mine.grad, b), reference), 1e-12)
            << "n=" << n << " k=" << k << " b=" << b;
      }
    }
}

TEST(TruncatedUnrolled, MatchesFiniteDifferencesOfTheTruncatedMap) {
  auto rng = make_rng(3);
  const int n = 4, T = 5;
  const auto M = normal_batch<double>(rng, 4, n, 1.0);
  const auto G = normal_batch<double>(rng, 4, n);
  for (int k : {1, 2, 4}) {
    const auto mine = solve_cpu(*truncated(k), M, G, T);
    for (index_t b = 0; b < M.batch(); ++b) {
      const Square fd = truncated_finite_differences(matrix_of(M, b), matrix_of(G, b), n, T, k);
      EXPECT_LT(relative_error(matrix_of(mine.grad, b), fd), 1e-7) << "k=" << k << " b=" << b;
    }
  }
}

TEST(TruncatedUnrolled, HistoryBoundsTheTruncationError) {
  // What the plugin is for: g_T - g_k is the sum of the contributions of reverse steps k+1..T,
  // so ||g_T - g_k||_F <= the sum of history entries k..T-1 of the full gradient's record, and
  // the error shrinks to 0 as k grows to T.
  auto rng = make_rng(4);
  const int n = 6, T = 30;
  const auto M = normal_batch<double>(rng, 8, n, 2.0);
  const auto G = normal_batch<double>(rng, 8, n);
  const auto full = solve_cpu(*truncated(T), M, G, T);
  for (index_t b = 0; b < M.batch(); ++b) {
    const Square exact = matrix_of(full.grad, b);
    Wide exact_norm = 0;
    for (Wide x : exact) exact_norm += x * x;
    for (int k : {1, 2, 5, 10, 20, 29}) {
      const Square g_k = matrix_of(solve_cpu(*truncated(k), M, G, T).grad, b);
      Wide tail = 0;
      for (int j = k; j < T; ++j) tail += full.history[b * T + j];
      const double error = relative_error(g_k, exact) * static_cast<double>(std::sqrt(exact_norm));
      EXPECT_LE(error, static_cast<double>(tail) * (1 + 1e-12) + 1e-14) << "b=" << b << " k=" << k;
    }
  }
}

TEST(TruncatedUnrolled, HistoryHoldsEachReverseStepsContribution) {
  auto rng = make_rng(5);
  const int n = 5, T = 3, k = 5;  // k > T: entries T.. are NaN
  const auto M = normal_batch<double>(rng, 6, n, 1.0);
  const auto G = normal_batch<double>(rng, 6, n);
  const auto R = forward(M, T);
  const auto full = solve_cpu(*truncated(k), M, G, T);
  ASSERT_EQ(full.stride, k);
  for (index_t b = 0; b < M.batch(); ++b) {
    // ||g_j - g_{j-1}||_F with g_j the gradient through j steps, g_0 = R ⊙ G.
    Square previous(static_cast<size_t>(n * n));
    for (int e = 0; e < n * n; ++e)
      previous[e] = Wide(R.data()[b * n * n + e]) * G.data()[b * n * n + e];
    for (int j = 1; j <= T; ++j) {
      const Square g_j = matrix_of(solve_cpu(*truncated(j), M, G, T).grad, b);
      Wide change = 0;
      for (int e = 0; e < n * n; ++e) change += (g_j[e] - previous[e]) * (g_j[e] - previous[e]);
      EXPECT_NEAR(full.history[b * k + j - 1], static_cast<double>(std::sqrt(change)),
                  1e-12 * (1 + static_cast<double>(std::sqrt(change))))
          << "b=" << b << " j=" << j;
      previous = g_j;
    }
    for (int j = T; j < k; ++j) EXPECT_TRUE(std::isnan(full.history[b * k + j]));
  }
}

TEST(TruncatedUnrolled, Float32AgreesWithFloat64) {
  auto rng = make_rng(6);
  const auto M = normal_batch<double>(rng, 32, 8, 1.0);
  const auto G = normal_batch<double>(rng, 32, 8);
  const auto wide = solve_cpu(*truncated(4), M, G, 10);
  const auto narrow = solve_cpu(*truncated(4), convert<float>(M), convert<float>(G), 10);
  for (index_t b = 0; b < M.batch(); ++b)
    EXPECT_LT(relative_error(matrix_of(narrow.grad, b), matrix_of(wide.grad, b)), 1e-4);
}

TEST(TruncatedUnrolled, BadInputGetsAStatusNotANeighboursNaN) {
  auto rng = make_rng(7);
  auto M = normal_batch<double>(rng, 3, 4, 1.0);
  const auto G = normal_batch<double>(rng, 3, 4);
  M(1, 2, 3) = std::nan("");
  const auto out = solve_cpu(*truncated(2), M, G, 5);
  EXPECT_EQ(out.status[0], SolveStatus::ok);
  EXPECT_EQ(out.status[1], SolveStatus::invalid_input);
  EXPECT_EQ(out.status[2], SolveStatus::ok);
  EXPECT_TRUE(std::isnan(out.grad(1, 0, 0)));
  EXPECT_TRUE(std::isfinite(out.grad(2, 0, 0)));
}

#if defined(SINKGRAD_WITH_CUDA)
template <class T>
std::vector<T> download(const cuda::DeviceBuffer& buffer, index_t count) {
  std::vector<T> host(static_cast<size_t>(count));
  cuda::copy_to_host(host.data(), buffer.data(), host.size() * sizeof(T));
  return host;
}

template <class Real>
void expect_cuda_matches_cpu(int n, int T, int k) {
  auto rng = make_rng(static_cast<std::uint64_t>(100 * n + k));
  const index_t B = 1000;
  auto M = normal_batch<Real>(rng, B, n, 1.0);
  const auto G = normal_batch<Real>(rng, B, n);
  M(7, 0, 0) = std::numeric_limits<Real>::infinity();  // one bad matrix
  const auto solver = truncated(k);
  const auto cpu = solve_cpu(*solver, M, G, T);

  const cuda::DeviceBatch<Real> dM(M), dR(forward(M, T)), dG(G);
  cuda::DeviceBatch<Real> dgrad(B, n);
  const cuda::DeviceBuffer dstatus(B * sizeof(SolveStatus)), diterations(B * sizeof(std::int32_t)),
      dhistory(B * cpu.stride * sizeof(Real));
  solver->solve(
      BackwardProblem<Real>{dM.view(), dR.view(), dG.view(), T},
      BackwardResult<Real>{dgrad.view(), dstatus.as<SolveStatus>(), diterations.as<std::int32_t>(),
                           dhistory.as<Real>(), cpu.stride},
      Device::cuda);
  cuda::synchronize("truncated_unrolled on cuda");
  const HostBatch<Real> grad = dgrad.download();
  const auto status = download<SolveStatus>(dstatus, B);
  const auto iterations = download<std::int32_t>(diterations, B);
  const auto history = download<Real>(dhistory, B * cpu.stride);
  const double tolerance = std::is_same_v<Real, float> ? 1e-5 : 1e-13;
  for (index_t b = 0; b < B; ++b) {
    ASSERT_EQ(status[b], cpu.status[b]) << "b=" << b;
    ASSERT_EQ(iterations[b], cpu.iterations[b]) << "b=" << b;
    if (cpu.status[b] != SolveStatus::ok) continue;
    EXPECT_LT(relative_error(matrix_of(grad, b), matrix_of(cpu.grad, b)), tolerance) << "b=" << b;
    for (int j = 0; j < cpu.stride; ++j) {
      const Real a = history[b * cpu.stride + j], c = cpu.history[b * cpu.stride + j];
      if (std::isnan(c))
        EXPECT_TRUE(std::isnan(a));
      else
        EXPECT_NEAR(a, c, tolerance * (1 + std::abs(c)));
    }
  }
}

TEST(TruncatedUnrolledCuda, MatchesTheCpuVariant) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_cuda_matches_cpu<double>(4, 20, 3);
  expect_cuda_matches_cpu<double>(8, 10, 10);
  expect_cuda_matches_cpu<float>(8, 20, 1);
  expect_cuda_matches_cpu<float>(16, 6, 4);
}
#endif

}  // namespace
}  // namespace sinkgrad::testing
