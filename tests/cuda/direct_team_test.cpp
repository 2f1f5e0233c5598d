// The team form of the corrected `direct` solve (solvers/direct/direct_team.hpp), which the
// CUDA `direct` runs for n <= 64, on the CPU team: against the Eigen path of the CPU `direct`
// solver (statuses, except a refusal that rounding decides at the condition threshold, and
// gradients to rounding) and against the one-matrix-per-thread direct_matrix (the same bits:
// both do the same operations in the same order). Runs everywhere (no GPU needed).

#include <Eigen/Cholesky>

#include <algorithm>
#include <cstring>

#include "core/team.hpp"
#include "solvers/direct/direct_math.hpp"
#include "solvers/direct/direct_team.hpp"
#include "tests/cuda/parity_support.hpp"

namespace sinkgrad::testing {
namespace {

// Solves every matrix of `in` with the team form on a CpuTeam of capacity Cap.
template <class Real, int Cap>
Outputs<Real> solve_with_cpu_team(const Inputs<Real>& in) {
  const index_t batch = in.R.batch();
  const int n = in.R.n();
  Outputs<Real> out;
  out.grad = HostBatch<Real>(batch, n, Real(-7));  // poisoned: every entry must be written
  out.status.assign(static_cast<std::size_t>(batch), static_cast<SolveStatus>(-1));
  out.iterations.assign(out.status.size(), -1);
  std::vector<Real> rows(3 * static_cast<std::size_t>(n) * n);
  for (index_t b = 0; b < batch; ++b) {
    const math::CpuTeam<Real, Cap> team(n, rows.data());
    const math::CpuMatrices<Real> mats{in.R.view().matrix(b), in.G.view().matrix(b),
                                       out.grad.view().matrix(b), n};
    const MatrixOutcome outcome = math::direct_corrected_team<Real>(team, mats);
    out.status[b] = outcome.status;
    out.iterations[b] = outcome.iterations;
  }
  return out;
}

template <class Real>
Outputs<Real> solve_with_direct_matrix(const Inputs<Real>& in) {
  const index_t batch = in.R.batch();
  const int n = in.R.n();
  Outputs<Real> out;
  out.grad = HostBatch<Real>(batch, n, Real(-7));
  out.status.resize(static_cast<std::size_t>(batch));
  out.iterations.resize(out.status.size());
  std::vector<Real> work(
      static_cast<std::size_t>(math::direct_workspace(n, math::SchurSystem::corrected)));
  for (index_t b = 0; b < batch; ++b) {
    const MatrixOutcome outcome =
        math::direct_matrix(in.R.view().matrix(b), in.G.view().matrix(b), out.grad.view().matrix(b),
                            n, math::SchurSystem::corrected, work.data());
    out.status[b] = outcome.status;
    out.iterations[b] = outcome.iterations;
  }
  return out;
}

// Whether the refusal rule (rcond >= 10 n eps) decides by rounding for this matrix: Eigen's
// and the shared factorisation's condition estimates of S + 11^T/n both within a factor 100 of
// the threshold. Near it, S has a condition number of about 1 / (10 n eps), where Higham's
// estimator itself moves with the rounding of the factor (Eigen's is blocked for n >= 32).
template <class Real>
bool rcond_near_threshold(const Real* R, const Real* G, int n) {
  const auto nn = static_cast<std::size_t>(n) * n;
  std::vector<Real> work(4 * static_cast<std::size_t>(n)), S(nn), scratch(3 * nn);
  const auto m = math::marginals_in(work.data(), n);
  if (!math::compute_marginals(R, G, n, m)) return false;
  math::schur_matrix(math::SchurSystem::corrected, R, m, n, S.data());
  for (Real& x : S) x += Real(1) / Real(n);
  using Matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::LLT<Matrix> llt(Eigen::Map<const Matrix>(S.data(), n, n));
  const Real norm = math::symmetric_norm_1(S.data(), n);
  if (llt.info() != Eigen::Success || !math::cholesky_factor(S.data(), n)) return false;
  const double threshold = 10.0 * n * double(math::Epsilon<Real>::value);
  const auto near = [&](double rcond) {
    return rcond > threshold / 100 && rcond < threshold * 100;
  };
  return near(double(llt.rcond())) &&
         near(double(math::cholesky_rcond(S.data(), norm, n, scratch.data())));
}

template <class Real, int Cap = math::max_team_n>
void check_team(int n, int T) {
  SCOPED_TRACE(std::string(sizeof(Real) == 8 ? "float64" : "float32") + ", n = " +
               std::to_string(n) + ", T = " + std::to_string(T) + ", cap = " + std::to_string(Cap));
  const SolverCase direct{"direct", {{"system", "corrected"}}};
  const auto solver = SolverRegistry::global().create(direct.name, direct.options);
  auto rng = make_rng(static_cast<std::uint64_t>(n * 131 + T * 7 + Cap));
  const index_t batch = std::clamp<index_t>(16384 / (index_t(n) * n), 24, 512);
  const Inputs<Real> in = make_inputs<Real>(rng, batch, n, T, /*bad_matrices=*/true);

  const Outputs<Real> eigen = solve_on(*solver, in, Device::cpu);
  const Outputs<Real> team = solve_with_cpu_team<Real, Cap>(in);
  // A refusal decided by rounding at the threshold is not compared (at most 2% of the batch).
  Outputs<Real> compared = team;
  const int nn = n * n;
  index_t borderline = 0;
  for (index_t b = 0; b < batch; ++b)
    if (team.status[b] != eigen.status[b] &&
        rcond_near_threshold(in.R.data() + b * nn, in.G.data() + b * nn, n)) {
      ++borderline;
      compared.status[b] = eigen.status[b];
      std::copy_n(eigen.grad.data() + b * nn, nn, compared.grad.data() + b * nn);
    }
  EXPECT_LE(borderline, std::max<index_t>(1, batch / 50));
  expect_parity(direct, in, eigen, compared);

  // The bad matrices of make_inputs are refused for the same reasons, and most others solved
  // (so that the comparison above is not vacuous).
  index_t ok = 0;
  for (index_t b = 0; b < batch; ++b) ok += team.status[b] == SolveStatus::ok;
  EXPECT_GE(ok, batch / 2);
  for (index_t b : {0, 1, 4, 5}) EXPECT_EQ(team.status[b], SolveStatus::invalid_input) << b;

  // Same operations as direct_matrix, in the same order: the same bits.
  const Outputs<Real> single = solve_with_direct_matrix(in);
  int mismatches = 0;
  for (index_t b = 0; b < batch && mismatches < 5; ++b) {
    if (team.status[b] != single.status[b]) {
      ADD_FAILURE() << "matrix " << b << ": team status " << int(team.status[b])
                    << ", direct_matrix status " << int(single.status[b]);
      ++mismatches;
      continue;
    }
    if (std::memcmp(team.grad.data() + b * nn, single.grad.data() + b * nn,
                    sizeof(Real) * static_cast<std::size_t>(nn)) != 0) {
      ADD_FAILURE() << "matrix " << b << ": team gradient differs from direct_matrix's";
      ++mismatches;
    }
  }
}

TEST(DirectTeam, CorrectedMatchesEigenAndDirectMatrix) {
  for (int n : {1, 2, 3, 5, 8, 16, 33, 64})
    for (int T : {1, 3, 50}) {
      check_team<double>(n, T);
      check_team<float>(n, T);
    }
}

// A capacity equal to n, as the GPU's fixed shapes have (TeamShape<8, 1, 8>, ...): the loops
// over cap end exactly at n.
TEST(DirectTeam, CapacityEqualToN) {
  for (int T : {1, 50}) {
    check_team<double, 4>(4, T);
    check_team<float, 4>(4, T);
    check_team<double, 8>(8, T);
    check_team<float, 8>(8, T);
    check_team<double, 32>(32, T);
    check_team<float, 32>(32, T);
  }
}

}  // namespace
}  // namespace sinkgrad::testing
