// `unrolled` is the exact derivative of the T-step forward: checked against central finite
// differences of the library's forward and against a tape-based reverse mode of the direct
// (exp, then divide) forward written here.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "solvers/unrolled/convention_unrolled.hpp"
#include "solvers/unrolled/convention_unrolled_team.hpp"
#include "solvers/unrolled/unrolled_team.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

enum class Logits { uniform_0_4, normal };

HostBatch<double> make_logits(std::mt19937_64& rng, Logits kind, index_t batch, int n) {
  return kind == Logits::uniform_0_4 ? uniform_batch<double>(rng, batch, n, 0.0, 4.0)
                                     : normal_batch<double>(rng, batch, n, 1.0);
}

// d/dM_ij of L(M) = sum(G ⊙ Sinkhorn_T(exp(M))) for one matrix, by the fourth-order central
// stencil (-L(+2h) + 8 L(+h) - 8 L(-h) + L(-2h)) / 12h with the library's forward in float64.
// All 4 n^2 perturbed copies go through one batched forward call.
std::vector<double> finite_difference_gradient(const double* M, const double* G, int n, int T,
                                               double h) {
  const int nn = n * n;
  const double offsets[4] = {2 * h, h, -h, -2 * h};
  HostBatch<double> perturbed(4 * nn, n);
  for (int e = 0; e < nn; ++e)
    for (int s = 0; s < 4; ++s) {
      double* copy = perturbed.data() + (4 * e + s) * nn;
      for (int k = 0; k < nn; ++k) copy[k] = M[k];
      copy[e] += offsets[s];
    }
  const HostBatch<double> R = forward(perturbed, T);
  std::vector<double> grad(nn);
  for (int e = 0; e < nn; ++e) {
    Wide loss[4];
    for (int s = 0; s < 4; ++s) {
      loss[s] = 0;
      const double* Rs = R.data() + (4 * e + s) * nn;
      for (int k = 0; k < nn; ++k) loss[s] += Wide(G[k]) * Rs[k];
    }
    grad[e] = static_cast<double>((-loss[0] + 8 * loss[1] - 8 * loss[2] + loss[3]) / (12 * h));
  }
  return grad;
}

struct UnrolledCase {
  int n;
  int T;
  Logits logits;
};

class UnrolledAgainstReferences : public ::testing::TestWithParam<UnrolledCase> {};

TEST_P(UnrolledAgainstReferences, FiniteDifferencesAndTapeReverseMode) {
  const auto [n, T, kind] = GetParam();
  auto rng = make_rng(200 + 97 * n + T + (kind == Logits::normal ? 5000 : 0));
  const index_t B = 3;
  const auto M = make_logits(rng, kind, B, n);
  const auto G = normal_batch<double>(rng, B, n);
  const auto R = forward(M, T);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  const auto sol = solve(*solver, M, R, G, T);
  const int nn = n * n;
  for (index_t b = 0; b < B; ++b) {
    SCOPED_TRACE("matrix " + std::to_string(b));
    ASSERT_EQ(sol.status[b], SolveStatus::ok);
    EXPECT_EQ(sol.iterations[b], T);
    const double* grad = sol.grad.data() + b * nn;

    // Central differences: error ~ h^4 truncation + eps |L| / h rounding, both in units of G
    // (|L| <= n |G|): for a gradient much smaller than G, more than 1e-9 of itself (a seed gave
    // 1.2e-9 at n = 2, T = 20), hence the term in |G|.
    const auto fd = finite_difference_gradient(M.data() + b * nn, G.data() + b * nn, n, T, 1e-3);
    const double G_norm = difference_norm(G.data() + b * nn, std::vector<double>(nn), nn);
    if (n == 1) {
      for (int k = 0; k < nn; ++k) EXPECT_NEAR(fd[k], 0.0, 1e-12);
    } else {
      const double fd_norm = difference_norm(fd, std::vector<double>(nn), nn);
      EXPECT_LT(difference_norm(grad, fd, nn), 1e-9 * fd_norm + 1e-10 * G_norm)
          << "relative error " << relative_error(grad, fd, nn);
    }

    // Tape-based reverse mode of exp-then-divide, in long double. The replay rounds relative to
    // G's size, T n products a step: a gradient much smaller than G (a nearly converged n = 2
    // matrix) is then known to less than 1e-13 of itself (a seed gave 1.4e-13 at n = 2, T = 20).
    const Square ref =
        reference_unrolled(widen(M.data() + b * nn, n), widen(G.data() + b * nn, n), n, T);
    if (n == 1) {
      EXPECT_EQ(grad[0], 0.0);
    } else {
      const double ref_norm = difference_norm(ref, std::vector<double>(nn), nn);
      EXPECT_LT(difference_norm(grad, ref, nn), 1e-13 * ref_norm + 1e-15 * n * T * G_norm)
          << "relative error " << relative_error(grad, ref, nn);
    }
  }
}

std::vector<UnrolledCase> unrolled_cases() {
  std::vector<UnrolledCase> cases;
  for (Logits kind : {Logits::uniform_0_4, Logits::normal})
    for (int n : {1, 2, 3, 5, 7, 16})
      for (int T : {1, 2, 5, 20}) cases.push_back({n, T, kind});
  return cases;
}

// Test names like n5_T20_uniform. (Built by appending: GCC 12 warns falsely, -Wrestrict, on
// "literal" + std::string chains.)
std::string case_name(const ::testing::TestParamInfo<UnrolledCase>& param_info) {
  std::string name = "n";
  name += std::to_string(param_info.param.n);
  name += "_T";
  name += std::to_string(param_info.param.T);
  name += param_info.param.logits == Logits::uniform_0_4 ? "_uniform" : "_normal";
  return name;
}

INSTANTIATE_TEST_SUITE_P(Sizes, UnrolledAgainstReferences, ::testing::ValuesIn(unrolled_cases()),
                         case_name);

// R is invariant to a constant added to a column of M (the first step normalises columns), so
// every column of the exact dL/dM sums to zero, for any T and logits of any magnitude. (Rows
// do not: a row shift is only absorbed at the fixed point.) The computed sums are not exactly
// zero: each exponential's argument (logits plus potentials) carries an absolute rounding of
// about |M| 2^-53, a relative error of each iterate, so the bound grows with the logits' size
// (at scale 1e3, n = 2, T = 1 a seed gave 4.7e-14 against a bound of 3.0e-14 without it).
TEST(Unrolled, GradientColumnsSumToZero) {
  auto rng = make_rng(250);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  for (double scale : {1.0, 10.0, 1e3})
    for (int n : {2, 6, 16})
      for (int T : {1, 3, 20}) {
        SCOPED_TRACE("scale " + std::to_string(scale) + ", n " + std::to_string(n) + ", T " +
                     std::to_string(T));
        const auto M = normal_batch<double>(rng, 8, n, scale);
        const auto G = normal_batch<double>(rng, 8, n);
        const auto sol = solve(*solver, M, forward(M, T), G, T);
        for (index_t b = 0; b < M.batch(); ++b) {
          ASSERT_EQ(sol.status[b], SolveStatus::ok);
          double gscale = 0, mscale = 1;
          for (int k = 0; k < n * n; ++k) {
            gscale = std::max(gscale, std::fabs(G.data()[b * n * n + k]));
            mscale = std::max(mscale, std::fabs(M.data()[b * n * n + k]));
          }
          for (int j = 0; j < n; ++j) {
            Wide column = 0;
            for (int i = 0; i < n; ++i) column += sol.grad(b, i, j);
            EXPECT_NEAR(static_cast<double>(column), 0.0, 1e-14 * n * T * gscale * mscale)
                << "column " << j;
          }
        }
      }
}

// dL/dM is linear in G.
TEST(Unrolled, LinearInGradOutput) {
  auto rng = make_rng(251);
  const int n = 7, T = 9;
  const auto solver = SolverConfig{"unrolled", {}}.create();
  const auto M = normal_batch<double>(rng, 4, n);
  const auto G1 = normal_batch<double>(rng, 4, n);
  const auto G2 = normal_batch<double>(rng, 4, n);
  HostBatch<double> G12(4, n);
  for (index_t k = 0; k < G12.size(); ++k) G12.data()[k] = 2 * G1.data()[k] - 3 * G2.data()[k];
  const auto R = forward(M, T);
  const auto d1 = solve(*solver, M, R, G1, T), d2 = solve(*solver, M, R, G2, T),
             d12 = solve(*solver, M, R, G12, T);
  std::vector<double> combined(G12.size());
  for (index_t k = 0; k < G12.size(); ++k)
    combined[k] = 2 * d1.grad.data()[k] - 3 * d2.grad.data()[k];
  EXPECT_LT(relative_error(d12.grad.data(), combined, combined.size()), 1e-13);
}

// A tape of checkpoints every L steps and one recomputed segment (what the GPU uses when T is
// long) replays the very same operations as the full tape: the same bits, in both domains.
template <class Real>
void expect_checkpointed_tape_is_exact() {
  auto rng = make_rng(252 + sizeof(Real));
  for (double scale : {1.0, 300.0})  // 300: spread beyond the linear domain, the log replay
    for (int n : {3, 8})
      for (int T : {7, 20}) {
        const auto M = normal_batch<Real>(rng, 1, n, scale);
        const auto G = normal_batch<Real>(rng, 1, n);
        const auto nn = static_cast<std::size_t>(n) * n;
        std::vector<Real> rows(3 * nn), full(nn), checkpointed(nn);
        std::vector<Real> tape(static_cast<std::size_t>(math::unrolled_workspace(n, T, T)));
        const math::CpuTeam<Real> full_team(n, rows.data(), tape.data());
        ASSERT_EQ(
            math::unrolled_team<Real>(
                full_team, math::CpuLogitMatrices<Real>{{M.data(), G.data(), full.data(), n}}, T, T)
                .status,
            SolveStatus::ok);
        for (int L : {1, 2, 3, 5, T - 1}) {
          SCOPED_TRACE("scale " + std::to_string(scale) + ", n " + std::to_string(n) + ", T " +
                       std::to_string(T) + ", L " + std::to_string(L));
          std::vector<Real> short_tape(static_cast<std::size_t>(math::unrolled_workspace(n, T, L)));
          const math::CpuTeam<Real> team(n, rows.data(), short_tape.data());
          const auto outcome = math::unrolled_team<Real>(
              team, math::CpuLogitMatrices<Real>{{M.data(), G.data(), checkpointed.data(), n}}, T,
              L);
          ASSERT_EQ(outcome.status, SolveStatus::ok);
          EXPECT_EQ(outcome.iterations, T);
          for (std::size_t k = 0; k < nn; ++k) EXPECT_EQ(checkpointed[k], full[k]) << "entry " << k;
        }
      }
}

// The one-matrix log-domain replay (n above the team sizes) recomputes a segment from its
// checkpoint with the forward's own operations: every segment length gives the full tape's
// bits, for every convention; and it is the exact derivative (against the team form, which is
// checked against references above).
template <class Real>
void expect_checkpointed_matrix_replay_is_exact() {
  auto rng = make_rng(262 + sizeof(Real));
  const double tolerance = sizeof(Real) == 4 ? 2e-4 : 1e-11;
  for (const auto& spec : {ForwardSpec{}, ForwardSpec{ForwardConvention::rows_first, 0},
                           ForwardSpec{ForwardConvention::columns_first, 0.05},
                           ForwardSpec{ForwardConvention::tilekernels, 1e-6}})
    for (double scale : {1.0, 300.0})
      for (int n : {3, 8})
        for (int T : {1, 2, 7, 20}) {
          const auto c = math::convention_forward<Real>(spec);
          const auto M = normal_batch<Real>(rng, 1, n, scale);
          const auto G = normal_batch<Real>(rng, 1, n);
          const auto nn = static_cast<std::size_t>(n) * n;
          std::vector<Real> full(nn), checkpointed(nn), team_grad(nn), rows(3 * nn);
          std::vector<Real> work(
              static_cast<std::size_t>(math::convention_unrolled_workspace(n, T, T)));
          ASSERT_EQ(math::convention_unrolled_matrix(c, M.data(), G.data(), full.data(), n, T, T,
                                                     work.data())
                        .status,
                    SolveStatus::ok);
          const HostBatch<Real> R(1, n);
          const auto solver = SolverRegistry::global().create("unrolled", {});
          const auto team = solve(*solver, M, R, G, T, false, spec);  // n <= 1024: team form
          double largest = 0;
          for (std::size_t k = 0; k < nn; ++k)
            largest = std::max(largest, std::fabs(double(team.grad.data()[k])));
          for (int L = 1; L <= T; ++L) {
            SCOPED_TRACE(describe(spec) + ", scale " + std::to_string(scale) + ", n " +
                         std::to_string(n) + ", T " + std::to_string(T) + ", L " +
                         std::to_string(L));
            std::vector<Real> short_work(
                static_cast<std::size_t>(math::convention_unrolled_workspace(n, T, L)));
            const auto outcome = math::convention_unrolled_matrix(
                c, M.data(), G.data(), checkpointed.data(), n, T, L, short_work.data());
            ASSERT_EQ(outcome.status, SolveStatus::ok);
            EXPECT_EQ(outcome.iterations, T);
            EXPECT_EQ(std::memcmp(checkpointed.data(), full.data(), nn * sizeof(Real)), 0);
          }
          for (std::size_t k = 0; k < nn; ++k)
            EXPECT_NEAR(full[k], team.grad.data()[k], tolerance * std::max(1.0, largest))
                << describe(spec) << ", n " << n << ", T " << T << ", entry " << k;
        }
}

TEST(Unrolled, CheckpointedMatrixReplayIsExactFloat) {
  expect_checkpointed_matrix_replay_is_exact<float>();
}
TEST(Unrolled, CheckpointedMatrixReplayIsExactDouble) {
  expect_checkpointed_matrix_replay_is_exact<double>();
}

// The eps forms' replay carries eps / b from step to step and recomputes it where a segment
// restarts from a checkpoint (resume): the checkpointed tape then agrees with the full one to
// rounding (not bit for bit: eps / b there is a reciprocal, eps u on the full tape).
template <class Real>
void expect_checkpointed_convention_tape_matches() {
  auto rng = make_rng(311 + sizeof(Real));
  const double tolerance = sizeof(Real) == 4 ? 2e-4 : 1e-11;
  for (const auto& spec : {ForwardSpec{ForwardConvention::columns_first, 0.05},
                           ForwardSpec{ForwardConvention::tilekernels, 0.02}}) {
    const auto c = math::convention_forward<Real>(spec);
    for (int n : {3, 8})
      for (int T : {2, 7, 20}) {  // T = 2, L = 1: tilekernels' peeled step 1 ends the first pass
        const auto M = normal_batch<Real>(rng, 1, n, 1.0);
        const auto G = normal_batch<Real>(rng, 1, n);
        const auto nn = static_cast<std::size_t>(n) * n;
        std::vector<Real> rows(3 * nn), full(nn), checkpointed(nn);
        std::vector<Real> tape(static_cast<std::size_t>(math::unrolled_workspace(n, T, T, true)));
        const math::CpuTeam<Real> full_team(n, rows.data(), tape.data());
        ASSERT_EQ(math::convention_unrolled_team<Real>(
                      full_team, math::CpuLogitMatrices<Real>{{M.data(), G.data(), full.data(), n}},
                      T, T, c)
                      .status,
                  SolveStatus::ok);
        double scale = 0;
        for (Real x : full) scale = std::max(scale, std::fabs(double(x)));
        for (int L : {1, 2, 3, T - 1}) {
          SCOPED_TRACE(describe(spec) + ", n " + std::to_string(n) + ", T " + std::to_string(T) +
                       ", L " + std::to_string(L));
          std::vector<Real> short_tape(
              static_cast<std::size_t>(math::unrolled_workspace(n, T, L, true)));
          const math::CpuTeam<Real> team(n, rows.data(), short_tape.data());
          const auto outcome = math::convention_unrolled_team<Real>(
              team, math::CpuLogitMatrices<Real>{{M.data(), G.data(), checkpointed.data(), n}}, T,
              L, c);
          ASSERT_EQ(outcome.status, SolveStatus::ok);
          for (std::size_t k = 0; k < nn; ++k)
            EXPECT_NEAR(checkpointed[k], full[k], tolerance * scale) << "entry " << k;
        }
      }
  }
}

TEST(Unrolled, CheckpointedConventionTapeMatchesFloat) {
  expect_checkpointed_convention_tape_matches<float>();
}
TEST(Unrolled, CheckpointedConventionTapeMatchesDouble) {
  expect_checkpointed_convention_tape_matches<double>();
}

// The CPU solves a batch of n = 4, 8, 16 W matrices at a time, one per SIMD lane, and a matrix
// alone with the scalar team: the same operations, so the same bits, whatever its neighbours
// (poisoned logits or G, a spread that needs the log domain, a G so large that the linear
// gradient overflows), in the batch's last incomplete group too, and rows_first read transposed;
// at T = 2100 (n = 16) the lanes' tape is checkpointed where the scalar one holds every step.
template <class Real>
void expect_lanes_equal_one_matrix_at_a_time() {
  auto rng = make_rng(404 + sizeof(Real));
  const auto solver = SolverRegistry::global().create("unrolled", {});
  for (const auto& spec : {ForwardSpec{}, ForwardSpec{ForwardConvention::rows_first, 0}})
    for (int n : {4, 8, 16})
      for (int T : {1, 3, 20, n == 16 ? 2100 : 7}) {
        const index_t B = 27;  // 3 groups of 8 lanes and 3 more (float); 6 of 4 and 3 (double)
        auto M = uniform_batch<Real>(rng, B, n, 0.0, 4.0);
        auto G = normal_batch<Real>(rng, B, n);
        M(2, 0, n - 1) = std::numeric_limits<Real>::quiet_NaN();
        G(9, n - 1, 1) = std::numeric_limits<Real>::infinity();
        for (int j = 0; j < n; ++j) M(5, 1, j) = Real(-300 * j);  // beyond the linear domain
        G(12, 1, 2) = std::numeric_limits<Real>::max() / 4;
        M(25, 0, 0) = std::numeric_limits<Real>::quiet_NaN();  // in the incomplete last group
        const HostBatch<Real> R(B, n);                         // unrolled reads M, not R
        const auto batch = solve(*solver, M, R, G, T, false, spec);
        for (index_t b = 0; b < B; ++b) {
          SCOPED_TRACE(describe(spec) + ", n " + std::to_string(n) + ", T " + std::to_string(T) +
                       ", matrix " + std::to_string(b));
          const auto alone =
              solve(*solver, single(M, b), single(R, b), single(G, b), T, false, spec);
          ASSERT_EQ(batch.status[b], alone.status[0]);
          EXPECT_EQ(batch.iterations[b], alone.iterations[0]);
          const index_t nn = index_t(n) * n;
          EXPECT_EQ(std::memcmp(batch.grad.data() + b * nn, alone.grad.data(), nn * sizeof(Real)),
                    0);
        }
        EXPECT_EQ(batch.status[2], SolveStatus::invalid_input);
        EXPECT_EQ(batch.status[9], SolveStatus::invalid_input);
        EXPECT_EQ(batch.status[0], SolveStatus::ok);
      }
}

TEST(Unrolled, LanesEqualOneMatrixAtATimeFloat) {
  expect_lanes_equal_one_matrix_at_a_time<float>();
}
TEST(Unrolled, LanesEqualOneMatrixAtATimeDouble) {
  expect_lanes_equal_one_matrix_at_a_time<double>();
}

TEST(Unrolled, CheckpointedTapeIsExactFloat) {
  expect_checkpointed_tape_is_exact<float>();
}
TEST(Unrolled, CheckpointedTapeIsExactDouble) {
  expect_checkpointed_tape_is_exact<double>();
}

}  // namespace
}  // namespace sinkgrad::testing
