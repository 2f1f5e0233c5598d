// `cg_plain`: implicit gradient assuming r = c = 1, by CG on the n x n Schur complement or on
// the 2n block system (solvers/cg_plain/cg_plain_math.hpp).

#include "backend/cpu/team_loop.hpp"
#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "solvers/cg/cg_options.hpp"
#include "solvers/cg_plain/cg_plain_math.hpp"
#include "solvers/implicit/exact_side.hpp"
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

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const auto settings = cg_settings<Real>(options(), auto_iterations(n));
    solve_on_exact_rows_cpu(problem, result, [&](const auto& p, const auto& r) {
      solve_each_matrix_with_team(
          r, p.grad_output.batch, n, [&](const auto& team, index_t b, Real* history) {
            const math::CpuMatrices<Real> mats{p.forward_output.matrix(b), p.grad_output.matrix(b),
                                               r.grad_logits.matrix(b), n};
            return math::cg_plain_matrix(team, mats, system_, settings, history);
          });
    });
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    solve_on_exact_rows_cuda(problem, result, [&](const auto& p, const auto& r) {
      cuda::cg_plain(p, r, system_,
                     cg_settings<Real>(options(), auto_iterations(problem.grad_output.n)));
    });
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
  SolverInfo info{"cg_plain",
                  "implicit gradient assuming r = c = 1 (exact only at a converged forward), by "
                  "conjugate gradients",
                  builtin_devices(), both_precisions(), options};
  registry.add(info, [info](const OptionValues& values) {
    return std::make_unique<CgPlainSolver>(info, values);
  });
}

}  // namespace sinkgrad
