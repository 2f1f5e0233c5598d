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
    // projected as the solver's default does for columns_first: zero column sums
    const MatrixOutcome outcome = math::direct_matrix(in.R.view().matrix(b), in.G.view().matrix(b),
                                                      shared.grad.view().matrix(b), n, system,
                                                      work.data(), math::GradientSide::columns);
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

// cholesky_conditioned against its definition, cholesky_rcond >= 10 n eps, on factors whose
// condition straddles that threshold: Q diag(lambda) Q^T with lambda log-spaced over a condition
// of up to 100 times the threshold's, and L L^T for unit lower triangular L with off-diagonal
// entries of random sign (where the comparison bound is far above ||A^-1||_1). The bound must lie
// above ||A^-1||_1 of the rounded factor's L L^T (long double), and both of its outcomes must
// occur, so that the test sees the bound decide and the estimate decide.
template <class Real>
void check_conditioned(int n, int kind, std::mt19937_64& rng, int& by_bound, int& by_estimate) {
  using Wide = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  std::uniform_real_distribution<double> uniform;
  std::normal_distribution<double> normal;
  const double eps = double(math::Epsilon<Real>::value);
  Eigen::MatrixXd A(n, n);
  if (kind == 0) {
    const Eigen::MatrixXd Q =
        Eigen::HouseholderQR<Eigen::MatrixXd>(Eigen::MatrixXd::NullaryExpr(n, n, [&] {
          return normal(rng);
        })).householderQ();
    const double condition = std::pow(100.0 / (10.0 * n * eps), uniform(rng));
    Eigen::VectorXd lambda(n);
    for (int i = 0; i < n; ++i)
      lambda(i) = std::pow(condition, -(n == 1 ? 0.0 : double(i) / (n - 1)));
    A = Q * lambda.asDiagonal() * Q.transpose();
  } else {
    const double size = 1.5 * uniform(rng);
    Eigen::MatrixXd L = Eigen::MatrixXd::Identity(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) L(i, j) = (uniform(rng) < 0.5 ? -size : size) * uniform(rng);
    A = L * L.transpose();
  }
  std::vector<Real> S(static_cast<std::size_t>(n) * n), work(3 * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) S[i * n + j] = static_cast<Real>(0.5 * (A(i, j) + A(j, i)));
  const Real norm = math::symmetric_norm_1(S.data(), n);
  if (!math::cholesky_factor(S.data(), n)) return;
  const Real threshold = Real(10 * n) * math::Epsilon<Real>::value;
  const bool estimate = math::cholesky_rcond(S.data(), norm, n, work.data()) >= threshold;
  EXPECT_EQ(math::cholesky_conditioned(S.data(), norm, n, work.data()), estimate);
  const Real bound = math::cholesky_inverse_bound(S.data(), n, work.data());
  (math::bound_passes(bound, norm, threshold) ? by_bound : by_estimate) += 1;
  Wide L = Wide::Zero(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) L(i, j) = static_cast<long double>(S[i * n + j]);
  // Through L^-1 (a triangular solve, accurate to about the condition of L, not of L L^T).
  const Wide inverse = L.triangularView<Eigen::Lower>().solve(Wide::Identity(n, n));
  const long double exact = (inverse.transpose() * inverse).cwiseAbs().colwise().sum().maxCoeff();
  EXPECT_GE(static_cast<long double>(bound) * (1 + 4 * n * eps), exact);
}

TEST(DenseFactorisation, ConditionedTakesTheEstimatesDecision) {
  auto rng = make_rng(7);
  for (int n : {1, 2, 3, 4, 5, 8, 16, 17, 32, 40, 64}) {
    int by_bound = 0, by_estimate = 0;
    for (int kind = 0; kind < 2; ++kind)
      for (int repeat = 0; repeat < 100; ++repeat) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", kind = " + std::to_string(kind));
        check_conditioned<float>(n, kind, rng, by_bound, by_estimate);
        check_conditioned<double>(n, kind, rng, by_bound, by_estimate);
      }
    EXPECT_GT(by_bound, 0) << "n = " << n;
    if (n > 1) {
      EXPECT_GT(by_estimate, 0) << "n = " << n;
    }
  }
}

// jacobi_eigen (the GPU's plain direct) against its definition, A = V diag(lambda) V^T with
// V^T V = I to a few n eps, and against Eigen's eigenvalues of the same rounded matrix in
// double (Weyl: a backward-stable result moves them by at most its backward error): random,
// nearly diagonal, nearly repeated (I - 1 1^T / n plus noise, the plain Schur matrix at
// convergence), diagonal with equal entries, and zero matrices.
template <class Real>
void check_jacobi(int n, int kind, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<Real> A(static_cast<std::size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double v = normal(rng);
      if (kind == 1) v = i == j ? v : 1e-6 * v;
      if (kind == 2) v = (i == j ? 1.0 : 0.0) - 1.0 / n + 1e-7 * v;
      if (kind == 3) v = i == j ? 0.5 : 0.0;
      if (kind == 4) v = 0;
      A[i * n + j] = A[j * n + i] = static_cast<Real>(v);
    }
  Eigen::MatrixXd reference(n, n);
  double size = 0;
  for (int k = 0; k < n * n; ++k) {
    reference(k / n, k % n) = A[k];
    size = std::max(size, std::abs(double(A[k])));
  }
  std::vector<Real> lambda = A, V(A.size());
  ASSERT_TRUE(math::jacobi_eigen(lambda.data(), V.data(), n));
  const double bound = 4.0 * n * std::numeric_limits<Real>::epsilon();
  double residual = 0, orthogonality = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double product = 0, gram = 0;
      for (int k = 0; k < n; ++k) {
        product += double(V[i * n + k]) * lambda[k * n + k] * V[j * n + k];
        gram += double(V[k * n + i]) * V[k * n + j];
      }
      residual = std::max(residual, std::abs(product - double(A[i * n + j])));
      orthogonality = std::max(orthogonality, std::abs(gram - (i == j ? 1.0 : 0.0)));
    }
  EXPECT_LE(residual, bound * size) << "A = V diag(lambda) V^T";
  EXPECT_LE(orthogonality, bound) << "V^T V = I";
  std::vector<double> ours(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) ours[k] = lambda[k * n + k];
  std::sort(ours.begin(), ours.end());
  const Eigen::VectorXd theirs =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(reference).eigenvalues();
  // Weyl bounds the eigenvalues' movement by the backward error in the 2-norm, ||A||_2 =
  // max |lambda|, not by the largest entry (a normal 64 x 64 matrix: about 16 against 4; with
  // the entry, one seed in about 25 failed by a few percent).
  const double two_norm = std::max(std::abs(theirs(0)), std::abs(theirs(n - 1)));
  for (int k = 0; k < n; ++k) EXPECT_NEAR(ours[k], theirs(k), bound * std::max(two_norm, 1e-300));
}

TEST(DenseFactorisation, JacobiEigenSatisfiesItsDefinition) {
  auto rng = make_rng(6);
  for (int n : {1, 2, 3, 4, 5, 8, 16, 33, 64})
    for (int kind = 0; kind < 5; ++kind)
      for (int repeat = 0; repeat < 10; ++repeat) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", kind = " + std::to_string(kind));
        check_jacobi<float>(n, kind, rng);
        check_jacobi<double>(n, kind, rng);
      }
}

}  // namespace
}  // namespace sinkgrad::testing
