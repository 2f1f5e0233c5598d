// The team form of the corrected `direct` solve (solvers/direct/direct_team.hpp), which the
// CUDA `direct` runs for n <= 64 and the CPU for n <= 8, on the CPU team: against Eigen's
// Cholesky of the same corrected system (statuses, except a refusal that rounding decides at the
// condition threshold: see rcond_near_threshold in parity_support.hpp, and gradients to rounding)
// and against the one-matrix-per-thread direct_matrix (the same bits: both do the same operations
// in the same order). Runs everywhere (no GPU needed).

#include <algorithm>
#include <cstring>

#include "kernels/team.hpp"
#include "solvers/direct/direct_math.hpp"
#include "solvers/direct/direct_team.hpp"
#include "solvers/direct/eigen_direct.hpp"
#include "tests/cuda/parity_support.hpp"

namespace sinkgrad::testing {
namespace {

// Solves every matrix of `in` with solve(R, G, grad, n) -> MatrixOutcome; the gradient starts
// poisoned, so every entry must be written.
template <class Real, class Solve>
Outputs<Real> solve_each(const Inputs<Real>& in, Solve&& solve) {
  const index_t batch = in.R.batch();
  const int n = in.R.n();
  Outputs<Real> out;
  out.grad = HostBatch<Real>(batch, n, Real(-7));
  out.status.assign(static_cast<std::size_t>(batch), static_cast<SolveStatus>(-1));
  out.iterations.assign(out.status.size(), -1);
  for (index_t b = 0; b < batch; ++b) {
    const MatrixOutcome outcome =
        solve(in.R.view().matrix(b), in.G.view().matrix(b), out.grad.view().matrix(b), n);
    out.status[b] = outcome.status;
    out.iterations[b] = outcome.iterations;
  }
  return out;
}

// The team form on a CpuTeam of capacity Cap.
template <class Real, int Cap>
Outputs<Real> solve_with_cpu_team(const Inputs<Real>& in, math::GradientSide side) {
  std::vector<Real> rows(3 * static_cast<std::size_t>(in.R.n()) * in.R.n());
  return solve_each(in, [&](const Real* R, const Real* G, Real* grad, int n) {
    const math::CpuTeam<Real, Cap> team(n, rows.data());
    return math::direct_corrected_team<Real>(team, math::CpuMatrices<Real>{R, G, grad, n}, side);
  });
}

// The corrected system factorised by Eigen (LLT and its condition estimate,
// solvers/direct/eigen_direct.hpp), independent of the team form's factorisation: what the CPU
// `direct` runs above n = 8.
template <class Real>
Outputs<Real> solve_with_eigen(const Inputs<Real>& in, math::GradientSide side) {
  math::DenseWorkspace<Real> workspace(in.R.n());
  return solve_each(in, [&](const Real* R, const Real* G, Real* grad, int n) {
    return math::direct_solve(R, G, grad, n, math::SchurSystem::corrected, workspace, side);
  });
}

// The one-thread pointer form (solvers/direct/direct_math.hpp).
template <class Real>
Outputs<Real> solve_with_direct_matrix(const Inputs<Real>& in, math::GradientSide side) {
  std::vector<Real> work(
      static_cast<std::size_t>(math::direct_workspace(in.R.n(), math::SchurSystem::corrected)));
  return solve_each(in, [&](const Real* R, const Real* G, Real* grad, int n) {
    return math::direct_matrix(R, G, grad, n, math::SchurSystem::corrected, work.data(), side);
  });
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

  // The solver's default for columns_first: the gradient projected onto zero column sums.
  const math::GradientSide columns = math::GradientSide::columns;
  const Outputs<Real> eigen = solve_with_eigen(in, columns);
  const Outputs<Real> team = solve_with_cpu_team<Real, Cap>(in, columns);
  expect_parity(direct, in, eigen, team);  // a refusal rounding decides is not compared
  // The CPU solver: the team form to n = 16 (the same bits), Eigen above.
  const Outputs<Real> cpu = solve_on(*solver, in, Device::cpu);
  if (n <= 16) {
    EXPECT_EQ(cpu.status, team.status);
    EXPECT_EQ(std::memcmp(cpu.grad.data(), team.grad.data(), sizeof(Real) * cpu.grad.size()), 0);
  } else {
    expect_parity(direct, in, eigen, cpu);
  }
  const int nn = n * n;

  // The bad matrices of make_inputs are refused for the same reasons, and most others solved
  // (so that the comparison above is not vacuous).
  index_t ok = 0;
  for (index_t b = 0; b < batch; ++b) ok += team.status[b] == SolveStatus::ok;
  EXPECT_GE(ok, batch / 2);
  for (index_t b : {0, 1, 4, 5}) EXPECT_EQ(team.status[b], SolveStatus::invalid_input) << b;

  // Same operations as direct_matrix, in the same order: the same bits, for every projection.
  int mismatches = 0;
  for (const math::GradientSide side :
       {math::GradientSide::columns, math::GradientSide::rows, math::GradientSide::none}) {
    const Outputs<Real> by_team = solve_with_cpu_team<Real, Cap>(in, side);
    const Outputs<Real> single = solve_with_direct_matrix(in, side);
    for (index_t b = 0; b < batch && mismatches < 5; ++b) {
      if (by_team.status[b] != single.status[b]) {
        ADD_FAILURE() << "matrix " << b << ": team status " << int(by_team.status[b])
                      << ", direct_matrix status " << int(single.status[b]);
        ++mismatches;
        continue;
      }
      if (std::memcmp(by_team.grad.data() + b * nn, single.grad.data() + b * nn,
                      sizeof(Real) * static_cast<std::size_t>(nn)) != 0) {
        ADD_FAILURE() << "matrix " << b << ": team gradient differs from direct_matrix's (side "
                      << int(side) << ")";
        ++mismatches;
      }
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
