// A solver plugin for the PyTorch layer's tests, CPU only: dL/dM = scale * G (not a Sinkhorn
// gradient; it shows that sgt.load_plugin reaches the registry and options reach the solver),
// iterations = 7 for every matrix. Option nan_at = b >= 0: matrix b's gradient is NaN with
// status ok, a broken output contract that the library must catch.

#include <limits>
#include <memory>

#include "sinkgrad/plugin.hpp"

namespace {

using sinkgrad::BackwardProblem;
using sinkgrad::BackwardResult;

class ScaledCopySolver : public sinkgrad::SolverVariants<ScaledCopySolver> {
 public:
  using SolverVariants::SolverVariants;

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const auto scale = static_cast<Real>(options().real("scale"));
    const auto nan_at = static_cast<sinkgrad::index_t>(options().real("nan_at"));
    sinkgrad::solve_each_matrix_on_cpu(
        result, problem.grad_output.batch, 0, [&](sinkgrad::index_t b, Real*, Real*) {
          for (int k = 0; k < n * n; ++k)
            result.grad_logits.matrix(b)[k] = b == nan_at
                                                  ? std::numeric_limits<Real>::quiet_NaN()
                                                  : scale * problem.grad_output.matrix(b)[k];
          return sinkgrad::MatrixOutcome{sinkgrad::SolveStatus::ok, 7};
        });
  }
};

void register_solvers(sinkgrad::SolverRegistry& registry) {
  sinkgrad::SolverInfo info{
      "torch_test_scaled_copy",
      "scale * G (a test plugin)",
      {sinkgrad::Device::cpu},
      sinkgrad::both_precisions(),
      {sinkgrad::OptionSpec::real("scale", "1", "factor", 0),
       sinkgrad::OptionSpec::real("nan_at", "-1", "matrix whose gradient is NaN with status ok",
                                  -1)}};
  registry.add(info, [info](const sinkgrad::OptionValues& options) {
    return std::make_unique<ScaledCopySolver>(info, options);
  });
}

}  // namespace

SINKGRAD_PLUGIN(register_solvers);
