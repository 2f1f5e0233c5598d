// `cg_plain`: implicit gradient assuming r = c = 1, by CG on the n x n Schur complement or on
// the 2n block system (solvers/cg_plain/cg_plain_math.hpp).

#include "core/log_base_chain.hpp"
#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "kernels/cpu/team_loop.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"
#include "solvers/common/cg_options.hpp"
#include "solvers/common/exact_side.hpp"
#include "solvers/common/projection_option.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "solvers/cg_plain/cg_plain_cuda.hpp"
#endif

namespace sinkgrad {
namespace {

class CgPlainSolver : public SolverVariants<CgPlainSolver> {
 public:
  CgPlainSolver(SolverInfo info, OptionValues options)
      : SolverVariants(std::move(info), std::move(options)),
        system_(this->options().text("system") == "block" ? math::PlainSystem::block
                                                          : math::PlainSystem::schur) {}

  // auto: twice the system size, room for CG's loss of orthogonality in floating point.
  int auto_iterations(int n) const { return system_ == math::PlainSystem::schur ? 2 * n : 4 * n; }

  int history_length(int n, Precision /*precision*/) const override {
    return cg_history_length(options(), auto_iterations(n));
  }

  bool reports_iterates(Device device) const override { return device == Device::cpu; }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const auto settings = cg_settings<Real>(options(), n, auto_iterations(n));
    // The exact side (solvers/common/exact_side.hpp): R^T and G^T, read transposed in place,
    // when the forward's last step normalised columns.
    const auto project = projection_side(options(), problem.forward,
                                         last_step_normalises_columns(problem.forward.convention));
    solve_each_matrix_on_exact_rows(
        problem, result, [&](const auto& team, const auto& mats, const auto& record) {
          return math::cg_plain_matrix(team, mats, system_, settings, record, project);
        });
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    // The kernel takes the exact side itself (it reads R and G transposed when it must).
    cuda::cg_plain(
        problem, result, system_,
        cg_settings<Real>(options(), problem.grad_output.n, auto_iterations(problem.grad_output.n)),
        projection_side(options(), problem.forward,
                        last_step_normalises_columns(problem.forward.convention)));
  }
#endif

 private:
  math::PlainSystem system_;
};

}  // namespace

void register_cg_plain(SolverRegistry& registry) {
  auto options = cg_option_specs("2n for schur, 4n for block");
  options.insert(options.begin(),
                 OptionSpec::choice("system", {"schur", "block"},
                                    "schur: (I - R^T R) beta = s_c - R^T s_r (size n); block: "
                                    "[I R; R^T I][alpha; beta] = [s_r; s_c] (size 2n)"));
  options.push_back(project_option_spec());
  SolverInfo info{"cg_plain",
                  "implicit gradient assuming r = c = 1 (exact only at a converged forward), by "
                  "conjugate gradients",
                  builtin_devices(),
                  both_precisions(),
                  options,
                  /*needs_logits=*/false,
                  /*log_base_gradient=*/true};
  info.cuda_carry_max_n = one_lane_carry_max_n;
  registry.add(info, [info](const OptionValues& values) {
    return std::make_unique<CgPlainSolver>(info, values);
  });
}

}  // namespace sinkgrad
