// The forward conventions on CUDA against the CPU and against the direct implementation of each
// formula (tests/support/convention_reference.hpp): R, the violation, the unrolled gradient and
// the plain system's exact side, with a poisoned matrix in the batch, host- and
// device-resident. Skipped without a GPU.

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "forward/sinkhorn_forward.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "tests/cuda/gpu_required.hpp"
#include "tests/support/convention_reference.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

// Over entries [first, last) (the whole batch by default); infinite where NaN is on one side.
template <class Real>
double max_difference(const HostBatch<Real>& a, const HostBatch<Real>& b, index_t first = 0,
                      index_t last = -1) {
  double worst = 0;
  for (index_t k = first; k < (last < 0 ? a.size() : last); ++k) {
    if (std::isnan(a.data()[k]) != std::isnan(b.data()[k])) return INFINITY;
    if (!std::isnan(a.data()[k]))
      worst = std::max(worst, std::fabs(double(a.data()[k]) - double(b.data()[k])));
  }
  return worst;
}

// max |λ| / min |λ| of matrix b's plain system I - Aᵀ A (A: R with its exact side as rows, as
// the solvers eliminate it), in long double; 1 where R is not finite (a poisoned matrix).
template <class Real>
double plain_system_condition(const HostBatch<Real>& R, index_t b, bool columns_exact) {
  using Matrix = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  const int n = R.n();
  Matrix A(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) A(i, j) = columns_exact ? R(b, j, i) : R(b, i, j);
  if (!A.allFinite()) return 1;
  const Matrix S = Matrix::Identity(n, n) - A.transpose() * A;
  const auto lambda = Eigen::SelfAdjointEigenSolver<Matrix>(S, Eigen::EigenvaluesOnly)
                          .eigenvalues()
                          .cwiseAbs()
                          .eval();
  return double(lambda.maxCoeff() / lambda.minCoeff());
}

// Solves on the GPU from host batches (staged), like solve() on the CPU.
template <class Real>
Solution<Real> solve_cuda(const BackwardSolver& solver, const HostBatch<Real>& M,
                          const HostBatch<Real>& R, const HostBatch<Real>& G, int T,
                          const ForwardSpec& spec) {
  Solution<Real> out;
  out.grad = HostBatch<Real>(R.batch(), R.n());
  out.status.assign(static_cast<size_t>(R.batch()), SolveStatus::ok);
  out.iterations.assign(static_cast<size_t>(R.batch()), -1);
  solver.solve(BackwardProblem<Real>{M.view(), R.view(), G.view(), T, spec},
               BackwardResult<Real>{out.grad.view(), out.status.data(), out.iterations.data()},
               Device::cuda);
  return out;
}

template <class Real>
void check_convention(const ForwardSpec& spec, int n, int T, double tolerance,
                      double logits_scale = 2.0) {
  SCOPED_TRACE(describe(spec) + " n " + std::to_string(n) + " T " + std::to_string(T));
  auto rng = make_rng(static_cast<std::uint64_t>(1700 + 31 * n + T));
  const index_t batch = 96;
  auto M = convert<Real>(normal_batch<double>(rng, batch, n, logits_scale));
  const auto G = convert<Real>(normal_batch<double>(rng, batch, n, 1.0));
  M(5, 0, n - 1) = std::numeric_limits<Real>::quiet_NaN();

  HostBatch<Real> R_cpu(batch, n), R_gpu(batch, n);
  std::vector<Real> v_cpu(static_cast<size_t>(batch)), v_gpu(v_cpu.size());
  EXPECT_EQ(sinkhorn_forward<Real>(M.view(), T, R_cpu.view(), v_cpu.data(), Device::cpu, spec), 1);
  EXPECT_EQ(sinkhorn_forward<Real>(M.view(), T, R_gpu.view(), v_gpu.data(), Device::cuda, spec), 1);
  EXPECT_LE(max_difference(R_cpu, R_gpu), tolerance);
  // Device-resident: the same kernel, the same bits.
  cuda::DeviceBatch<Real> M_dev(M), R_dev(batch, n);
  sinkhorn_forward<Real>(M_dev.view(), T, R_dev.view(), nullptr, Device::cuda, spec);
  const HostBatch<Real> R_back = R_dev.download();
  EXPECT_EQ(std::memcmp(R_back.data(), R_gpu.data(), sizeof(Real) * R_gpu.size()), 0);
  // The reference knows the three conventions with team forms; the others are checked against
  // their projects' code on the CPU (tests/library/convention_presets_test.cpp).
  if (sizeof(Real) == 8 && has_team_form(spec.convention)) {
    const int nn = n * n;
    for (index_t b = 0; b < 3; ++b) {
      const Square ref = convention_forward_reference(
          widen(M.data() + b * nn, n), n, T, std::string(to_string(spec.convention)), spec.eps);
      for (int k = 0; k < nn; ++k)
        EXPECT_NEAR(R_gpu.data()[b * nn + k], static_cast<double>(ref[k]), 1e-14);
    }
  }
  // The plain systems are compared at T = 1 only (below).
  std::vector<double> plain_condition;
  if (T == 1 && n > 2)
    for (index_t b = 0; b < batch; ++b)
      plain_condition.push_back(
          plain_system_condition(R_cpu, b, last_step_normalises_columns(spec.convention)));
  for (const auto& config : all_solver_configs()) {
    SCOPED_TRACE(config.label());
    const auto solver = config.create();
    const auto cpu = solve(*solver, M, R_cpu, G, T, false, spec);
    const auto gpu = solve_cuda(*solver, M, R_cpu, G, T, spec);
    EXPECT_EQ(gpu.status[5], SolveStatus::invalid_input);
    // Near convergence the plain systems' near-null eigenvalue amplifies any rounding
    // difference without bound (docs/math.md): compared far from it only. A 2 x 2 matrix is
    // near it after one step already (the CPU and the GPU were seen 4e-9 apart in float64,
    // 0.14 in float32, at n = 2, T = 1, with rows_first and with tilekernels).
    const bool plain = config.name == "cg_plain" || config.label() == "direct system=plain";
    if (plain && (T != 1 || n <= 2)) continue;
    for (index_t b = 0; b < batch; ++b) ASSERT_EQ(cpu.status[b], gpu.status[b]) << b;
    double scale = 0;
    for (index_t k = 0; k < cpu.grad.size(); ++k)
      if (std::isfinite(cpu.grad.data()[k]))
        scale = std::max(scale, std::fabs(double(cpu.grad.data()[k])));
    // Implicit solvers amplify rounding by the conditioning; unrolled is replayed identically.
    const double relative = config.name == "unrolled" ? 100 * tolerance : 1e3 * tolerance;
    if (!plain) {
      EXPECT_LE(max_difference(cpu.grad, gpu.grad), relative * std::max(scale, 1.0));
      continue;
    }
    // The plain system at T = 1 is not near convergence, but its near-null eigenvalue can still
    // fall close to 0 by chance (mhc_triton with eps: I - Rᵀ R at a condition of 1e5-1e7 in a
    // few batches of 100), where CPU and GPU (Eigen's eigensolver, Jacobi's) differ by rounding
    // times that condition: matrix by matrix, the bound grows with it beyond T = 1's usual 1e3.
    const int nn = n * n;
    for (index_t b = 0; b < batch; ++b) {
      EXPECT_LE(max_difference(cpu.grad, gpu.grad, b * nn, (b + 1) * nn),
                relative * std::max(scale, 1.0) * std::max(1.0, plain_condition[b] / 1e3))
          << "matrix " << b << ", plain system's condition " << plain_condition[b];
    }
  }
}

// Every convention but the default, with and without eps.
std::vector<ForwardSpec> other_conventions() {
  return {ForwardSpec{ForwardConvention::rows_first, 0.0},
          ForwardSpec{ForwardConvention::rows_first, 1e-8},
          ForwardSpec{ForwardConvention::columns_first, 1e-3},
          ForwardSpec{ForwardConvention::tilekernels, 1e-6}};
}

TEST(ConventionParity, EveryConventionOnCudaMatchesTheCpu) {
  SINKGRAD_REQUIRE_GPU();
  for (const ForwardSpec& spec : other_conventions())
    // 33 and 40: lane teams where some lanes own two rows and others one (at T = 50 a defect
    // there can converge away: a team form that was wrong by 0.05 at T = 3 agreed to 1e-10).
    for (int n : {1, 2, 3, 4, 7, 8, 16, 32, 33, 40, 64})
      for (int T : {1, 3, 20}) {
        check_convention<double>(spec, n, T, 1e-13);
        check_convention<float>(spec, n, T, 2e-5);
      }
}

// Above n = 64 one block per matrix (kernels/cuda/block_team.cuh); on the CPU the forward runs
// the log-domain form of forward/convention_forward.hpp there.
TEST(ConventionParity, BlockTeamMatchesTheCpu) {
  SINKGRAD_REQUIRE_GPU();
  for (const ForwardSpec& spec : other_conventions())
    for (int n : {65, 100})
      for (int T : {3, 20}) {
        check_convention<double>(spec, n, T, 1e-13);
        check_convention<float>(spec, n, T, 2e-5);
      }
}

// The presets without a team form run the per-matrix kernels at every n (one thread per matrix,
// the replay checkpointed where T does not fit shared memory).
TEST(ConventionParity, PresetsWithoutATeamFormMatchTheCpu) {
  SINKGRAD_REQUIRE_GPU();
  for (const char* name : {"megatron_main", "magi2", "mhc_triton"})
    for (const ForwardSpec& spec : {make_forward_spec(name), make_forward_spec(name, 1e-3)})
      for (int n : {1, 2, 4, 7, 16, 33, 70})
        for (int T : {1, 3, 20, 97}) {
          check_convention<double>(spec, n, T, 1e-13);
          check_convention<float>(spec, n, T, 2e-5);
        }
}

// Saturated logits: the row softmax falls below eps, where carrying the implicit gradient from
// log B to M (core/log_base_chain.hpp) changes it by O(1).
TEST(ConventionParity, SaturatedLogitsAreCarriedAsOnTheCpu) {
  SINKGRAD_REQUIRE_GPU();
  for (const ForwardSpec& spec :
       {make_forward_spec("tilekernels", 1e-6), make_forward_spec("tilekernels", 1e-3),
        make_forward_spec("mhc_triton", 1e-8)})
    for (int n : {4, 8, 33})
      for (int T : {3, 20}) {
        check_convention<double>(spec, n, T, 1e-13, 6.0);
        check_convention<float>(spec, n, T, 2e-5, 6.0);
      }
}

// T = 50 does not fit the team form's tape: the GPU replays it in checkpointed segments, each
// restarting from a stored state (and its eps terms), where the CPU keeps every step.
TEST(ConventionParity, CheckpointedReplayMatchesTheCpu) {
  SINKGRAD_REQUIRE_GPU();
  for (const auto& spec : {ForwardSpec{ForwardConvention::columns_first, 1e-3},
                           ForwardSpec{ForwardConvention::tilekernels, 1e-6}})
    for (int n : {3, 4, 8, 16, 33})
      for (int T : {50, 97}) {
        check_convention<double>(spec, n, T, 1e-13);
        check_convention<float>(spec, n, T, 2e-5);
      }
}

}  // namespace
}  // namespace sinkgrad::testing
