// `auto`: the implicit backward safe to train with. Per matrix, the corrected implicit solve
// (cg_corrected's bits), and for the matrices where that fails, where the forward is too far
// from converged for the corrected formula, or where the implicit gradient is too small beside
// that distance to be trusted (cg_corrected_math.hpp, ImplicitTrust), the exact unrolled
// gradient (unrolled's bits), computed for those matrices only, on the same device, without
// waiting for the GPU (solvers/unrolled/unrolled_fallback.hpp). The status says which path each
// matrix took: ok, or fallback.

#include <memory>

#include "core/log_base_chain.hpp"
#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "solvers/cg_corrected/cg_corrected_driver.hpp"
#include "solvers/common/cg_options.hpp"
#include "solvers/common/projection_option.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"

namespace sinkgrad {
namespace {

class AutoSolver : public SolverVariants<AutoSolver> {
 public:
  using SolverVariants::SolverVariants;

  int history_length(int n, Precision /*precision*/) const override {
    return cg_history_length(options(), cg_corrected_auto_iterations(n));
  }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    run(problem, result, Device::cpu);
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    run(problem, result, Device::cuda);
  }
#endif

 private:
  template <class Real>
  void run(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
           Device device) const {
    const int n = problem.grad_output.n;
    const auto option = [&](const char* name, double automatic) {
      return static_cast<Real>(options().is_auto(name) ? automatic : options().real(name));
    };
    const math::ImplicitTrust<Real> trust{option("max_violation", math::auto_max_violation),
                                          option("gradient_floor", math::auto_gradient_floor)};
    cg_corrected_batch(problem, result, device,
                       cg_settings<Real>(options(), n, cg_corrected_auto_iterations(n)),
                       options().text("project") == "true", trust);
    replace_by_unrolled(problem, result, device, FallbackStatus::mark);
  }
};

}  // namespace

void register_auto(SolverRegistry& registry) {
  auto options = cg_option_specs("2n");
  options.push_back(project_option_spec());
  options.push_back(OptionSpec::real(
      "max_violation", "auto",
      "matrices whose forward marginals are farther from one (max |r_i - 1|, max |c_j - 1|) get "
      "the exact unrolled gradient instead of the corrected implicit one, whose error is about "
      "that violation (auto: 1e-5)",
      0, true));
  options.push_back(OptionSpec::real(
      "gradient_floor", "auto",
      "matrices whose implicit gradient is smaller than gradient_floor x their violation x "
      "||R * G|| get the exact unrolled gradient: where dL/dR lies along the marginal the "
      "forward left inexact (copied streams) the implicit gradient vanishes and the exact one "
      "does not (auto: 1e4; 0: off)",
      0, true));
  SolverInfo info{"auto",
                  "the corrected implicit gradient by CG where it succeeds and the forward is near "
                  "convergence, the exact unrolled gradient for the other matrices (status "
                  "fallback), computed for those only",
                  builtin_devices(),
                  both_precisions(),
                  options,
                  /*needs_logits=*/true,
                  /*log_base_gradient=*/true};
  info.cuda_carry_max_n = one_lane_carry_max_n;
  registry.add(info, [info](const OptionValues& values) {
    return std::make_unique<AutoSolver>(info, values);
  });
}

}  // namespace sinkgrad
