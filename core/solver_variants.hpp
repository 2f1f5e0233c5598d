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

// Derived provides template <class Real> run_cpu(problem, result) const and, optionally,
// run_cuda(problem, result) const (device memory only; compiled where the build has CUDA). A
// solver without run_cuda has no CUDA variant: list only Device::cpu in its SolverInfo, and
// BackwardSolver refuses a cuda solve with a message naming it.
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
  void solve_cuda(const BackwardProblem<float>& p, const BackwardResult<float>& r) const override {
    run_cuda_if_any(p, r);
  }
  void solve_cuda(const BackwardProblem<double>& p,
                  const BackwardResult<double>& r) const override {
    run_cuda_if_any(p, r);
  }

 private:
  template <class Real>
  void run_cuda_if_any(const BackwardProblem<Real>& p, const BackwardResult<Real>& r) const {
    if constexpr (requires { self().template run_cuda<Real>(p, r); })
      self().template run_cuda<Real>(p, r);
    else
      BackwardSolver::solve_cuda(p, r);  // "has no CUDA variant"
  }

  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace sinkgrad
