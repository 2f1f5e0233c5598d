#pragma once
// The abstract backward solver: given R, G = dL/dR (and M, T for replaying solvers), write
// dL/dM with a status and an iteration count per matrix.

#include <string>
#include <vector>

#include "core/backward_problem.hpp"
#include "core/solver_options.hpp"
#include "core/types.hpp"

namespace sinkgrad {

struct SolverInfo {
  std::string name;
  std::string description;
  std::vector<Device> devices;
  std::vector<Precision> precisions;
  std::vector<OptionSpec> options;
  bool needs_logits = false;  // replays the forward from M (otherwise R and G suffice)
  // Writes dL/d(log B), as the implicit formulas give it: under a base that is no scaling of
  // exp(M) the checked solve carries it to dL/dM from the logits (core/log_base_chain.hpp),
  // which such a solve then needs.
  bool log_base_gradient = false;
  // Up to this n the CUDA solve carries its dL/d(log B) to M itself, in its own kernel, while
  // the gradient is still in shared memory; the checked solve carries the larger n (0: all).
  int cuda_carry_max_n = 0;

  bool supports(Device device) const;
  bool supports(Precision precision) const;
};

class BackwardSolver {
 public:
  BackwardSolver(SolverInfo info, OptionValues options);
  virtual ~BackwardSolver() = default;
  BackwardSolver(const BackwardSolver&) = delete;
  BackwardSolver& operator=(const BackwardSolver&) = delete;

  const SolverInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  const OptionValues& options() const { return options_; }
  // Whether the solver comes from a plugin: its results in device memory are checked on the GPU
  // as well (core/solver_contract.hpp); the plugin loader marks it (mark_from_plugin).
  bool from_plugin() const { return from_plugin_; }

  // Entries of residual history per matrix for size n (0 for a solver that does not iterate).
  virtual int history_length(int n, Precision precision) const;

  // Whether a solve on `device` hands every iterate's gradient to BackwardResult::iterates
  // (false: the field is ignored).
  virtual bool reports_iterates(Device device) const;

  // Checks shapes, T and device support (throws Error), then solves; returns when the result
  // is written. Memory each device accepts (the views' MemorySpace, and status, iterations and
  // residual_history alike):
  //   Device::cpu:  every view in host memory.
  //   Device::cuda: every view in device memory (used in place), or every view in host memory
  //                 (copied to the GPU, solved there, the outputs copied back); no mix.
  //                 Throws Error("no CUDA device: ...") when no GPU is usable, and Error with
  //                 CUDA's message when a CUDA call or kernel fails.
  // The solver's output contract applies (core/solver_contract.hpp): whatever solve_cpu or
  // solve_cuda throws becomes Error naming the solver; a host result with an unknown status or a
  // negative iteration count is an Error, and a non-finite gradient is never reported as a
  // success or not_converged (breakdown).
  void solve(const BackwardProblem<float>& problem, const BackwardResult<float>& result,
             Device device = Device::cpu) const;
  void solve(const BackwardProblem<double>& problem, const BackwardResult<double>& result,
             Device device = Device::cpu) const;

  // The same checks, then a solve on cuda ordered by stream, for callers that manage their own
  // (the PyTorch layer): every view in device memory, launched on problem.stream, returning
  // without waiting for the GPU. Launch errors throw Error at once; errors while the kernels
  // run surface at the caller's next synchronisation. A plugin must launch on
  // cuda::stream_of(problem) for this to be ordered (docs/adding-a-solver.md).
  void solve_async(const BackwardProblem<float>& problem,
                   const BackwardResult<float>& result) const;
  void solve_async(const BackwardProblem<double>& problem,
                   const BackwardResult<double>& result) const;

 protected:
  // Host memory in, host memory out.
  virtual void solve_cpu(const BackwardProblem<float>&, const BackwardResult<float>&) const = 0;
  virtual void solve_cpu(const BackwardProblem<double>&, const BackwardResult<double>&) const = 0;
  // Device memory in, device memory out. The default throws: solver has no CUDA variant.
  virtual void solve_cuda(const BackwardProblem<float>&, const BackwardResult<float>&) const;
  virtual void solve_cuda(const BackwardProblem<double>&, const BackwardResult<double>&) const;

 private:
  // wait: whether a solve on cuda waits for the GPU before it returns (solve) or not
  // (solve_async, device memory only).
  template <class Real>
  void checked_solve(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                     Device device, bool wait = true) const;

  friend void mark_from_plugin(BackwardSolver& solver);

  SolverInfo info_;
  OptionValues options_;
  bool from_plugin_ = false;
};

void mark_from_plugin(BackwardSolver& solver);

}  // namespace sinkgrad
