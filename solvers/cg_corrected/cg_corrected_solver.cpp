// `cg_corrected`: implicit gradient of the corrected system built from the actual marginals,
// by CG (solvers/cg_corrected/cg_corrected_math.hpp).

#include "core/log_base_chain.hpp"
#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "kernels/cpu/team_loop.hpp"
#include "solvers/cg_corrected/cg_corrected_driver.hpp"
#include "solvers/cg_corrected/cg_corrected_math.hpp"
#include "solvers/common/cg_options.hpp"
#include "solvers/common/exact_side.hpp"
#include "solvers/common/projection_option.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "solvers/cg_corrected/cg_corrected_cuda.hpp"
#endif

namespace sinkgrad {

template <class Real>
void cg_corrected_batch(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                        Device device, math::CgSettings<Real> settings, bool project,
                        math::ImplicitTrust<Real> trust) {
  // The exact side eliminated (cg_corrected_math.hpp): R^T and G^T, read transposed in place,
  // when the forward's last step normalised columns; the projection's side seen from there.
  const math::GradientSide side = projection_side(
      project, problem.forward, last_step_normalises_columns(problem.forward.convention));
  if (device == Device::cuda) {
#if defined(SINKGRAD_WITH_CUDA)
    return cuda::cg_corrected(problem, result, settings, side, trust);
#else
    throw Error("cg_corrected on cuda needs a build with CUDA");
#endif
  }
  solve_each_matrix_on_exact_rows(
      problem, result, [&](const auto& team, const auto& mats, const auto& record) {
        return math::cg_corrected_matrix(team, mats, settings, record, side, trust);
      });
}

template void cg_corrected_batch(const BackwardProblem<float>&, const BackwardResult<float>&,
                                 Device, math::CgSettings<float>, bool, math::ImplicitTrust<float>);
template void cg_corrected_batch(const BackwardProblem<double>&, const BackwardResult<double>&,
                                 Device, math::CgSettings<double>, bool,
                                 math::ImplicitTrust<double>);

namespace {

class CgCorrectedSolver : public SolverVariants<CgCorrectedSolver> {
 public:
  using SolverVariants::SolverVariants;

  int history_length(int n, Precision /*precision*/) const override {
    return cg_history_length(options(), cg_corrected_auto_iterations(n));
  }

  bool reports_iterates(Device device) const override { return device == Device::cpu; }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    cg_corrected_batch(problem, result, Device::cpu, settings<Real>(problem),
                       options().text("project") == "true");
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    cg_corrected_batch(problem, result, Device::cuda, settings<Real>(problem),
                       options().text("project") == "true");
  }
#endif

 private:
  template <class Real>
  math::CgSettings<Real> settings(const BackwardProblem<Real>& problem) const {
    const int n = problem.grad_output.n;
    return cg_settings<Real>(options(), n, cg_corrected_auto_iterations(n));
  }
};

}  // namespace

void register_cg_corrected(SolverRegistry& registry) {
  auto options = cg_option_specs("2n");
  options.push_back(project_option_spec());
  SolverInfo info{"cg_corrected",
                  "implicit gradient of the corrected system (diag(c) - R^T diag(r)^-1 R) beta = "
                  "s_c - R^T diag(r)^-1 s_r with the actual marginals, by conjugate gradients",
                  builtin_devices(),
                  both_precisions(),
                  options,
                  /*needs_logits=*/false,
                  /*log_base_gradient=*/true};
  info.cuda_carry_max_n = one_lane_carry_max_n;
  registry.add(info, [info](const OptionValues& values) {
    return std::make_unique<CgCorrectedSolver>(info, values);
  });
}

}  // namespace sinkgrad
