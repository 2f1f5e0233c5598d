// `truncated_unrolled`: a sinkgrad solver plugin. Back-propagates through only the last k of
// the T forward steps (truncated_unrolled_math.hpp), on the CPU and, when the installed
// sinkgrad has CUDA, on the GPU. Load it with `sinkgrad --plugin libtruncated_unrolled.so ...`
// or SINKGRAD_PLUGIN_PATH; see docs/adding-a-solver.md.

#include <algorithm>
#include <memory>

#include "sinkgrad/plugin.hpp"
#include "truncated_unrolled_math.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "truncated_unrolled_cuda.hpp"
#endif

namespace truncated_unrolled {

using sinkgrad::BackwardProblem;
using sinkgrad::BackwardResult;

class TruncatedUnrolledSolver : public sinkgrad::SolverVariants<TruncatedUnrolledSolver> {
 public:
  using SolverVariants::SolverVariants;

  int k() const { return static_cast<int>(std::min<long long>(options().integer("k"), 1 << 20)); }

  // One history entry per step taken back: the size of what that step added to the gradient.
  int history_length(int /*n*/, sinkgrad::Precision /*precision*/) const override { return k(); }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const int T = problem.forward_iterations;
    const auto workspace = static_cast<std::size_t>(workspace_reals(n, steps_back(k(), T)));
    sinkgrad::solve_each_matrix_on_cpu(
        result, problem.grad_output.batch, workspace,
        [&](sinkgrad::index_t b, Real* work, Real* history) {
          return truncated_backward_matrix(problem.logits.matrix(b), problem.grad_output.matrix(b),
                                           result.grad_logits.matrix(b), n, T, k(), work, history);
        });
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    solve_on_cuda(problem, result, k());
  }
#endif
};

void register_solvers(sinkgrad::SolverRegistry& registry) {
  sinkgrad::SolverInfo info{
      "truncated_unrolled",
      "truncated back-propagation: differentiates only the last k of the T forward steps, "
      "holding the earlier potentials constant (k >= T: exact unrolled; k = 1: one-step)",
      sinkgrad::builtin_devices(),
      sinkgrad::both_precisions(),
      {sinkgrad::OptionSpec::integer("k", "1", "forward steps differentiated, the last ones", 1)},
      /*needs_logits=*/true};
  registry.add(info, [info](const sinkgrad::OptionValues& options) {
    return std::make_unique<TruncatedUnrolledSolver>(info, options);
  });
}

}  // namespace truncated_unrolled

SINKGRAD_PLUGIN(truncated_unrolled::register_solvers);
