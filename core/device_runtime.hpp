#pragma once
// What the interfaces of core/ need from a GPU, without including a backend: whether a device
// is usable, a solve of host-resident batches run on device copies, and waiting for the device.
// kernels/cuda/runtime.cpp implements it in builds with CUDA; kernels/cpu/no_device_runtime.cpp
// (every call refuses with a message saying so) in builds without.

#include <functional>
#include <string>

#include "core/backward_problem.hpp"
#include "core/solver_contract.hpp"

namespace sinkgrad::device {

// Throws Error when no CUDA device is usable (or the build has no CUDA).
void require_cuda();

// Waits for all work on the device and throws Error naming `what` if any of it failed.
void synchronize(const std::string& what);

template <class Real>
using DeviceSolve = std::function<void(const BackwardProblem<Real>&, const BackwardResult<Real>&)>;

// Uploads the host batches of problem (and the residual history rows, whose tails are kept, and
// diagnostics.relative_residual), runs solve on device copies, waits for it and downloads the
// gradient, status, iterations, history and relative_residual into result. The other
// diagnostics are not staged: the caller computes them on the host.
template <class Real>
void solve_staged(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  const DeviceSolve<Real>& solve, const std::string& what);

// Launches the solver-independent diagnostics of R (device memory, as are the diagnostics) on
// `stream` (a cudaStream_t; null: the legacy default stream) and returns without waiting.
template <class Real>
void store_diagnostics(BatchView<const Real> R, const SolveDiagnostics<Real>& diagnostics,
                       void* stream);

// The output contract on a result in device memory (core/solver_contract.hpp), on `stream`:
// mark_not_written before the solve (status and iterations -1, gradient NaN); check_output
// after it: a matrix that breaks the contract becomes breakdown with a NaN gradient, and one
// with a non-finite gradient under a success or not_converged becomes breakdown. Both return
// without waiting, except check_output with `first` given: it waits and stores the first breach.
template <class Real>
void mark_not_written(const BackwardResult<Real>& result, void* stream);

// Carries an implicit solve's dL/d(log B) to dL/dM (core/log_base_chain.hpp) in device memory,
// for every matrix not marked fallback, on `stream`; returns without waiting.
template <class Real>
void carry_to_logits(BatchView<const Real> M, const ForwardSpec& spec,
                     const BackwardResult<Real>& result, void* stream);
template <class Real>
void check_output(const BackwardResult<Real>& result, void* stream, BreachReport* first);

}  // namespace sinkgrad::device
