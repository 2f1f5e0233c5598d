// The host/device factorisations of solvers/direct/dense_factorisation.hpp, which the CUDA
// `direct` runs, against the Eigen path of the CPU `direct` solver, on the host: the same
// statuses and gradients to rounding. Runs everywhere (no GPU needed).

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "solvers/direct/direct_math.hpp"
#include "tests/cuda/parity_support.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
void check_against_eigen(math::SchurSystem system, int n, int T) {
  const std::string option = system == math::SchurSystem::plain ? "plain" : "corrected";
  const auto solver = SolverRegistry::global().create("direct", {{"system", option}});
  auto rng = make_rng(static_cast<std::uint64_t>(n * 31 + T));
  const index_t batch = std::clamp<index_t>(8192 / (index_t(n) * n), 16, 512);
  const Inputs<Real> in = make_inputs<Real>(rng, batch, n, T, /*bad_matrices=*/true);
  const Outputs<Real> eigen = solve_on(*solver, in, Device::cpu);

  Outputs<Real> shared;
  shared.grad = HostBatch<Real>(batch, n);
  shared.status.resize(static_cast<std::size_t>(batch));
  shared.iterations.resize(shared.status.size());
  std::vector<Real> work(static_cast<std::size_t>(math::direct_workspace(n, system)));
  for (index_t b = 0; b < batch; ++b) {
    const MatrixOutcome outcome =
        math::direct_matrix(in.R.view().matrix(b), in.G.view().matrix(b),
                            shared.grad.view().matrix(b), n, system, work.data());
    shared.status[b] = outcome.status;
    shared.iterations[b] = outcome.iterations;
  }
  expect_parity(SolverCase{"direct", {{"system", option}}}, in, eigen, shared);
}

TEST(DenseFactorisation, CholeskyWithConditionEstimateMatchesEigen) {
  for (int n : {1, 2, 3, 5, 8, 17, 32, 64})
    for (int T : {1, 3, 50}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      check_against_eigen<double>(math::SchurSystem::corrected, n, T);
      check_against_eigen<float>(math::SchurSystem::corrected, n, T);
    }
}

TEST(DenseFactorisation, JacobiPseudoInverseMatchesEigen) {
  for (int n : {1, 2, 3, 5, 8, 17, 32, 64})
    for (int T : {1, 3, 50}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", T = " + std::to_string(T));
      check_against_eigen<double>(math::SchurSystem::plain, n, T);
      check_against_eigen<float>(math::SchurSystem::plain, n, T);
    }
}

TEST(DenseFactorisation, RcondEqualsEigen) {
  auto rng = make_rng(5);
  std::normal_distribution<double> normal;
  for (int n : {2, 3, 7, 16, 40}) {
    Eigen::MatrixXd A = Eigen::MatrixXd::NullaryExpr(n, n, [&] { return normal(rng); });
    A = A * A.transpose() + 1e-6 * Eigen::MatrixXd::Identity(n, n);
    Eigen::LLT<Eigen::MatrixXd> llt(A);
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> L = A;
    const double norm = math::symmetric_norm_1(L.data(), n);
    ASSERT_TRUE(math::cholesky_factor(L.data(), n));
    std::vector<double> work(3 * static_cast<std::size_t>(n));
    const double rcond = math::cholesky_rcond(L.data(), norm, n, work.data());
    EXPECT_NEAR(rcond, llt.rcond(), 1e-8 * llt.rcond()) << "n = " << n;
  }
}

}  // namespace
}  // namespace sinkgrad::testing
