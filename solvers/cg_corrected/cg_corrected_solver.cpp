// `cg_corrected`: implicit gradient of the corrected system built from the actual marginals,
// by CG (solvers/cg_corrected/cg_corrected_math.hpp).

#include "backend/cpu/team_loop.hpp"
#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "solvers/cg/cg_options.hpp"
#include "solvers/cg_corrected/cg_corrected_math.hpp"
#include "solvers/implicit/projection_option.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "solvers/cg_corrected/cg_corrected_cuda.hpp"
#endif

namespace sinkgrad {
namespace {

class CgCorrectedSolver : public SolverVariants<CgCorrectedSolver> {
 public:
  using SolverVariants::SolverVariants;

  // auto: 2n; n - 1 suffice in exact arithmetic, the rest absorbs rounding.
  static int auto_iterations(int n) { return 2 * n; }

  int history_length(int n, Precision /*precision*/) const override {
    return cg_history_length(options(), auto_iterations(n));
  }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const auto settings = cg_settings<Real>(options(), auto_iterations(n));
    const auto project = projection_side(options(), problem.forward, false);
    solve_each_matrix_with_team(
        result, problem.grad_output.batch, n, [&](const auto& team, index_t b, Real* history) {
          const math::CpuMatrices<Real> mats{problem.forward_output.matrix(b),
                                             problem.grad_output.matrix(b),
                                             result.grad_logits.matrix(b), n};
          return math::cg_corrected_matrix(team, mats, settings, history, project);
        });
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    cuda::cg_corrected(problem, result,
                       cg_settings<Real>(options(), auto_iterations(problem.grad_output.n)),
                       projection_side(options(), problem.forward, false));
  }
#endif
};

}  // namespace

void register_cg_corrected(SolverRegistry& registry) {
  auto options = cg_option_specs("2n");
  options.push_back(project_option_spec());
  SolverInfo info{"cg_corrected",
                  "implicit gradient of the corrected system (diag(c) - R^T diag(r)^-1 R) beta = "
                  "s_c - R^T diag(r)^-1 s_r with the actual marginals, by conjugate gradients",
                  builtin_devices(), both_precisions(), options};
  registry.add(info, [info](const OptionValues& values) {
    return std::make_unique<CgCorrectedSolver>(info, values);
  });
}

}  // namespace sinkgrad
