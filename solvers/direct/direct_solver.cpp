// `direct`: the plain or corrected Schur-complement system solved by a dense factorisation
// (Eigen; the corrected system up to n = 16 in the GPU's team form), with the singularity
// handled explicitly:
//   corrected: S 1 = 0 exactly and the right-hand side is orthogonal to 1, so
//              (S + (1/n) 1 1^T) beta = b has the solution with 1^T beta = 0 and is positive
//              definite when R has no zero block; Cholesky, refused when its reciprocal
//              condition estimate is below 10 n eps (the gradient could not be trusted).
//   plain:     S = I - R^T R is indefinite and non-singular when the forward has not converged
//              and singular (null vector 1) when it has; beta = S^+ b through a symmetric
//              eigendecomposition, eigenvalues below n eps max|lambda| treated as zero. This is
//              the solution CG on the plain system approaches; a numerical rank below n - 1
//              (R with a block structure) is reported as breakdown, and an eigenvalue so near
//              the cut that rounding decides whether it is kept, when that changes the
//              gradient, as ill_conditioned (plain_cut.hpp; the same test on the GPU).
// With project=true (the default) the gradient is then projected onto the forward's invariant
// subspace (solvers/common/invariant_side.hpp).

#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "kernels/cpu/batch_loop.hpp"
#include "kernels/cpu/team_loop.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "solvers/direct/direct_cuda.hpp"
#endif
#include "solvers/common/exact_side.hpp"
#include "solvers/common/projection_option.hpp"
#include "solvers/direct/direct_lanes.hpp"
#include "solvers/direct/direct_team.hpp"
#include "solvers/direct/eigen_direct.hpp"

namespace sinkgrad {
namespace {

using math::DenseWorkspace;
using math::SchurSystem;

// The corrected system up to this n in the team form the GPU runs (direct_team.hpp), W matrices
// at a time on SIMD lanes (direct_lanes.hpp), above it with Eigen, whose blocked Cholesky
// vectorises (measured: docs/benchmarks-cpu.md).
constexpr int max_cpu_team_direct_n = 16;

class DirectSolver : public SolverVariants<DirectSolver> {
 public:
  DirectSolver(SolverInfo info, OptionValues options)
      : SolverVariants(std::move(info), std::move(options)),
        system_(this->options().text("system") == "plain" ? SchurSystem::plain
                                                          : SchurSystem::corrected) {}

  // The side to project in the coordinates of the solve: the plain system's are transposed
  // after a forward that left the columns exact (exact_side.hpp).
  math::GradientSide project(const ForwardSpec& spec) const {
    return projection_side(
        options(), spec,
        system_ == SchurSystem::plain && last_step_normalises_columns(spec.convention));
  }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const auto side = project(problem.forward);
    if (system_ == SchurSystem::plain)
      return solve_on_exact_rows_cpu(
          problem, result, [&](const auto& p, const auto& r) { solve_cpu_rows(p, r, side); });
    const int n = problem.grad_output.n;
    if (n > max_cpu_team_direct_n) return solve_cpu_rows(problem, result, side);
    const auto mats_of = [&](index_t b) {
      return math::CpuMatrices<Real>{problem.forward_output.matrix(b),
                                     problem.grad_output.matrix(b), result.grad_logits.matrix(b),
                                     n};
    };
    // One matrix per SIMD lane where n is a compile-time team's, the others one at a time.
    const auto per_group = [&](auto N, index_t first, auto* lanes, Real* work) {
      return math::direct_lanes<N.value>([&](int w) { return mats_of(first + w); }, side, lanes,
                                         work);
    };
    solve_each_matrix_with_lanes(
        result, problem.grad_output.batch, n, per_group,
        static_cast<std::size_t>(math::direct_lanes_workspace(n)), {SolveStatus::ok, 0},
        [&](const auto& team, index_t b, Real*) {
          return math::direct_corrected_team<Real>(team, mats_of(b), side);
        },
        3 * static_cast<std::size_t>(n) * n, 0);
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const auto side = project(problem.forward);
    if (system_ == SchurSystem::plain)
      return solve_on_exact_rows_cuda(problem, result, [&](const auto& p, const auto& r) {
        cuda::direct(p, r, system_, side);
      });
    cuda::direct(problem, result, system_, side);
  }
#endif

 private:
  // The plain system as written, which assumes R's rows exact (exact_side.hpp).
  template <class Real>
  void solve_cpu_rows(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                      math::GradientSide side) const {
    const int n = problem.grad_output.n;
    solve_each_matrix_on_cpu_with(
        result, problem.grad_output.batch, [&] { return DenseWorkspace<Real>(n); },
        [&](index_t b, DenseWorkspace<Real>& workspace, Real*) {
          return math::direct_solve(problem.forward_output.matrix(b), problem.grad_output.matrix(b),
                                    result.grad_logits.matrix(b), n, system_, workspace, side);
        });
  }

  SchurSystem system_;
};

}  // namespace

void register_direct(SolverRegistry& registry) {
  SolverInfo info{
      "direct",
      "the plain or corrected Schur-complement system by a dense factorisation (corrected: "
      "Cholesky of S + 11^T/n; plain: pseudo-inverse by symmetric eigendecomposition)",
      builtin_devices(),
      both_precisions(),
      {OptionSpec::choice("system", {"corrected", "plain"},
                          "corrected: actual marginals r, c; plain: assumes r = c = 1"),
       project_option_spec()},
      /*needs_logits=*/false,
      /*log_base_gradient=*/true};
  registry.add(info, [info](const OptionValues& values) {
    return std::make_unique<DirectSolver>(info, values);
  });
}

}  // namespace sinkgrad
