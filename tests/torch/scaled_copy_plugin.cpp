// A solver plugin for the PyTorch layer's tests: dL/dM = scale * G (not a Sinkhorn gradient; it
// shows that sgt.load_plugin reaches the registry and options reach the solver), iterations = 7
// for every matrix. Option nan_at = b >= 0: matrix b's gradient is NaN with status ok, a broken
// output contract that the library must catch. In a build with CUDA it runs on cuda too, by the
// same per-matrix text (scaled_copy.hpp, scaled_copy_cuda.cu).

#include <limits>
#include <memory>

#include "scaled_copy.hpp"
#include "sinkgrad/plugin.hpp"

namespace {

using sinkgrad::BackwardProblem;
using sinkgrad::BackwardResult;
using sinkgrad_test::ScaledCopy;

class ScaledCopySolver : public sinkgrad::SolverVariants<ScaledCopySolver> {
 public:
  using SolverVariants::SolverVariants;

  template <class Real>
  ScaledCopy<Real> per_matrix(const BackwardProblem<Real>& problem,
                              const BackwardResult<Real>& result) const {
    return {problem, result, static_cast<Real>(options().real("scale")),
            static_cast<sinkgrad::index_t>(options().real("nan_at"))};
  }

  template <class Real>
  void run_cpu(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    const ScaledCopy<Real> solve = per_matrix(problem, result);
    sinkgrad::solve_each_matrix_on_cpu(
        result, problem.grad_output.batch, 0,
        [&](sinkgrad::index_t b, Real* work, Real* history) { return solve(b, work, history); });
  }

#if defined(SINKGRAD_WITH_CUDA)
  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    scaled_copy_cuda(per_matrix(problem, result));
  }
#endif
};

void register_solvers(sinkgrad::SolverRegistry& registry) {
  sinkgrad::SolverInfo info {
    "torch_test_scaled_copy", "scale * G (a test plugin)",
#if defined(SINKGRAD_WITH_CUDA)
        {sinkgrad::Device::cpu, sinkgrad::Device::cuda},
#else
        {sinkgrad::Device::cpu},
#endif
        sinkgrad::both_precisions(), {
      sinkgrad::OptionSpec::real("scale", "1", "factor", 0),
          sinkgrad::OptionSpec::real("nan_at", "-1", "matrix whose gradient is NaN with status ok",
                                     -1)
    }
  };
  registry.add(info, [info](const sinkgrad::OptionValues& options) {
    return std::make_unique<ScaledCopySolver>(info, options);
  });
}

}  // namespace

SINKGRAD_PLUGIN(register_solvers);
