// `unrolled`: exact reverse replay of the T forward steps (solvers/unrolled/unrolled_math.hpp).

#include "core/cpu_batch_loop.hpp"
#include "core/solver_registry.hpp"
#include "solvers/common/solver_variants.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "kernels/backward_kernels.hpp"
#endif
#include "solvers/builtin_solvers.hpp"
#include "solvers/unrolled/unrolled_math.hpp"

namespace sinkgrad {
namespace {

class UnrolledSolver : public SolverVariants<UnrolledSolver> {
 public:
  using SolverVariants::SolverVariants;

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const int T = problem.forward_iterations;
    const auto workspace = static_cast<std::size_t>(math::unrolled_workspace(n, T, T));
    solve_each_matrix_on_cpu(
        result, problem.grad_output.batch, workspace, [&](index_t b, Real* work, Real*) {
          return math::unrolled_backward_matrix(problem.logits.matrix(b),
                                                problem.grad_output.matrix(b),
                                                result.grad_logits.matrix(b), n, T, T, work);
        });
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    cuda::unrolled(problem, result);
  }
#endif
};

}  // namespace

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
