#pragma once
// Connects a solver's templated drivers to BackwardSolver's per-precision virtual functions,
// so that each solver writes its CPU (and CUDA) driver once as a template over Real.

#include <vector>

#include "core/backward_solver.hpp"

namespace sinkgrad {

// Devices the built-in solvers run on in this build.
inline std::vector<Device> builtin_devices() {
#if defined(SINKGRAD_WITH_CUDA)
  return {Device::cpu, Device::cuda};
#else
  return {Device::cpu};
#endif
}

inline std::vector<Precision> both_precisions() {
  return {Precision::float32, Precision::float64};
}

// Derived provides template <class Real> run_cpu(problem, result) const and, when built with
// CUDA, run_cuda(problem, result) const.
template <class Derived>
class SolverVariants : public BackwardSolver {
 public:
  using BackwardSolver::BackwardSolver;

 protected:
  void solve_cpu(const BackwardProblem<float>& p, const BackwardResult<float>& r) const override {
    self().template run_cpu<float>(p, r);
  }
  void solve_cpu(const BackwardProblem<double>& p, const BackwardResult<double>& r) const override {
    self().template run_cpu<double>(p, r);
  }
#if defined(SINKGRAD_WITH_CUDA)
  void solve_cuda(const BackwardProblem<float>& p, const BackwardResult<float>& r) const override {
    self().template run_cuda<float>(p, r);
  }
  void solve_cuda(const BackwardProblem<double>& p,
                  const BackwardResult<double>& r) const override {
    self().template run_cuda<double>(p, r);
  }
#endif

 private:
  const Derived& self() const {
    return static_cast<const Derived&>(*this);
  }
};

}  // namespace sinkgrad
