// `unrolled`: exact reverse replay of the T forward steps, in the form unrolled_plan chooses
// (solvers/unrolled/unrolled_form.hpp): for n <= 1024 the team forms, the seeds' forward on
// SIMD lanes where n is a compile-time team's; above, the log-domain replay one matrix at a
// time.

#include <algorithm>
#include <vector>

#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "kernels/cpu/batch_loop.hpp"
#include "kernels/cpu/team_loop.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "solvers/unrolled/unrolled_cuda.hpp"
#endif
#include "solvers/unrolled/convention_unrolled.hpp"
#include "solvers/unrolled/convention_unrolled_team.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"
#include "solvers/unrolled/unrolled_form.hpp"
#include "solvers/unrolled/unrolled_lanes.hpp"
#include "solvers/unrolled/unrolled_team.hpp"

namespace sinkgrad {
namespace {

template <class Real>
void unrolled_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  const UnrolledPlan plan = unrolled_plan(problem.forward, n, max_cpu_team_n);
  const bool seeds = plan.form == UnrolledForm::seeds_team;
  const auto workspace = static_cast<std::size_t>(math::unrolled_workspace(n, T, T, !seeds));
  const auto convention = math::convention_forward<Real>(problem.forward);
  const auto replay_in_team_form = [&](auto matrices) {
    using Matrices = decltype(matrices);
    const auto per_matrix = [&](const auto& team, index_t b, Real*) {
      const Matrices mats{{problem.logits.matrix(b), problem.grad_output.matrix(b),
                           result.grad_logits.matrix(b), n}};
      return seeds ? math::unrolled_team<Real>(team, mats, T, T)
                   : math::convention_unrolled_team<Real>(team, mats, T, T, convention);
    };
    const auto rows = 3 * static_cast<std::size_t>(n) * n;
    if (!seeds)
      return solve_each_matrix_with_team(result, problem.grad_output.batch, n, per_matrix, rows,
                                         workspace);
    // The seeds' forward: one matrix per SIMD lane where n is a compile-time team's.
    const int L = math::unrolled_lanes_segment(n, T);
    const auto per_group = [&](auto N, index_t first, auto* lanes, Real* work) {
      const auto mats_of = [&](int w) {
        return Matrices{{problem.logits.matrix(first + w), problem.grad_output.matrix(first + w),
                         result.grad_logits.matrix(first + w), n}};
      };
      return math::unrolled_lanes<N.value>(mats_of, T, L, lanes, work);
    };
    solve_each_matrix_with_lanes(result, problem.grad_output.batch, n, per_group,
                                 static_cast<std::size_t>(math::unrolled_lanes_workspace(n, T, L)),
                                 {SolveStatus::ok, T}, per_matrix, rows, workspace);
  };
  if (plan.form != UnrolledForm::log_domain) {
    if (plan.transposed) return replay_in_team_form(math::CpuLogitMatrices<Real, true>{});
    return replay_in_team_form(math::CpuLogitMatrices<Real>{});
  }
  solve_each_matrix_on_cpu(result, problem.grad_output.batch,
                           static_cast<std::size_t>(math::convention_unrolled_workspace(n, T, T)),
                           [&](index_t b, Real* work, Real*) {
                             return math::convention_unrolled_matrix(
                                 convention, problem.logits.matrix(b),
                                 problem.grad_output.matrix(b), result.grad_logits.matrix(b), n, T,
                                 T, work);
                           });
}

class UnrolledSolver : public SolverVariants<UnrolledSolver> {
 public:
  using SolverVariants::SolverVariants;

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    unrolled_cpu(problem, result);
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    cuda::unrolled(problem, result);
  }
#endif
};

// The fallback on the cpu: the matrices to replace gathered into a batch of their own, solved
// as unrolled solves any batch, and scattered back.
template <class Real>
void replace_by_unrolled_cpu(const BackwardProblem<Real>& problem,
                             const BackwardResult<Real>& result, FallbackStatus mode) {
  std::vector<index_t> which;
  for (index_t b = 0; b < problem.grad_output.batch; ++b) {
    const SolveStatus status = result.status[b];
    if (mode == FallbackStatus::mark ? status != SolveStatus::ok : !is_success(status))
      which.push_back(b);
  }
  if (which.empty()) return;
  const auto count = static_cast<index_t>(which.size());
  const int n = problem.grad_output.n;
  const index_t nn = index_t(n) * n;
  HostBatch<Real> M(count, n), G(count, n), grad(count, n);
  for (index_t k = 0; k < count; ++k) {
    std::copy_n(problem.logits.matrix(which[k]), nn, M.data() + k * nn);
    std::copy_n(problem.grad_output.matrix(which[k]), nn, G.data() + k * nn);
  }
  std::vector<SolveStatus> status(static_cast<std::size_t>(count));
  std::vector<std::int32_t> iterations(static_cast<std::size_t>(count));
  BackwardProblem<Real> gathered = problem;
  gathered.logits = M.view();
  gathered.grad_output = G.view();
  gathered.forward_output = {nullptr, count, n, MemorySpace::host};  // the replay needs no R
  unrolled_cpu(gathered, BackwardResult<Real>{grad.view(), status.data(), iterations.data()});
  for (index_t k = 0; k < count; ++k) {
    const index_t b = which[k];
    std::copy_n(grad.data() + k * nn, nn, result.grad_logits.matrix(b));
    if (mode == FallbackStatus::keep) continue;
    const SolveStatus replayed = status[static_cast<std::size_t>(k)];
    result.status[b] = replayed == SolveStatus::ok ? SolveStatus::fallback : replayed;
    result.iterations[b] = iterations[static_cast<std::size_t>(k)];
  }
}

}  // namespace

template <class Real>
void replace_by_unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                         Device device, FallbackStatus status) {
  if (problem.logits.data == nullptr && problem.grad_output.batch > 0)
    throw Error("the exact fallback replays the forward and needs the logits");
  if (device == Device::cpu) return replace_by_unrolled_cpu(problem, result, status);
#if defined(SINKGRAD_WITH_CUDA)
  cuda::replace_by_unrolled(problem, result, status);
#else
  throw Error("the exact fallback on cuda needs a build with CUDA");
#endif
}

template void replace_by_unrolled(const BackwardProblem<float>&, const BackwardResult<float>&,
                                  Device, FallbackStatus);
template void replace_by_unrolled(const BackwardProblem<double>&, const BackwardResult<double>&,
                                  Device, FallbackStatus);

void register_unrolled(SolverRegistry& registry) {
  SolverInfo info{"unrolled",
                  "exact derivative of the T-step forward by reverse replay (autograd without "
                  "the n x n per-step tape: only the 2nT potentials are kept)",
                  builtin_devices(),
                  both_precisions(),
                  {},
                  /*needs_logits=*/true};
  registry.add(info, [info](const OptionValues& options) {
    return std::make_unique<UnrolledSolver>(info, options);
  });
}

}  // namespace sinkgrad
