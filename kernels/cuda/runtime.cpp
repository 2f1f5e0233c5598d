// core/device_runtime.hpp on CUDA: device presence, synchronisation, and the one utility that
// runs a solve of host-resident batches on device copies.

#include "core/device_runtime.hpp"

#include "kernels/cuda/device_memory.hpp"
#include "kernels/cuda/diagnostics.hpp"

namespace sinkgrad::device {
namespace {

// Copies of a host-resident solve in device memory: inputs uploaded, outputs downloaded.
template <class Real>
class StagedSolve {
 public:
  StagedSolve(const BackwardProblem<Real>& p, const BackwardResult<Real>& r) : host_(r) {
    const auto bytes = static_cast<std::size_t>(p.forward_output.size()) * sizeof(Real);
    const auto batch = static_cast<std::size_t>(p.forward_output.batch);
    problem_ = p;
    result_ = r;
    problem_.forward_output = upload(p.forward_output, bytes, R_);
    problem_.grad_output = upload(p.grad_output, bytes, G_);
    if (p.logits.data != nullptr) problem_.logits = upload(p.logits, bytes, M_);
    grad_ = cuda::DeviceBuffer(bytes);
    result_.grad_logits = {grad_.as<Real>(), r.grad_logits.batch, r.grad_logits.n,
                           MemorySpace::device};
    status_ = cuda::DeviceBuffer(batch * sizeof(SolveStatus));
    iterations_ = cuda::DeviceBuffer(batch * sizeof(std::int32_t));
    result_.status = status_.as<SolveStatus>();
    result_.iterations = iterations_.as<std::int32_t>();
    if (r.residual_history != nullptr) {
      history_ =
          cuda::DeviceBuffer(batch * static_cast<std::size_t>(r.history_stride) * sizeof(Real));
      result_.residual_history = history_.as<Real>();
      cuda::copy_to_device(history_.data(), r.residual_history, history_.bytes());  // keep tails
    }
    // Only CG's residual is staged (NaN-filled on the host, kept where no CG overwrites it);
    // the caller computes the other diagnostics from the host's R.
    result_.diagnostics = {};
    if (r.diagnostics.relative_residual != nullptr) {
      residual_ = cuda::DeviceBuffer(batch * sizeof(Real));
      result_.diagnostics.relative_residual = residual_.as<Real>();
      cuda::copy_to_device(residual_.data(), r.diagnostics.relative_residual, residual_.bytes());
    }
  }
  const BackwardProblem<Real>& problem() const { return problem_; }
  const BackwardResult<Real>& result() const { return result_; }
  void download() const {
    cuda::copy_to_host(host_.grad_logits.data, grad_.data(), grad_.bytes());
    cuda::copy_to_host(host_.status, status_.data(), status_.bytes());
    cuda::copy_to_host(host_.iterations, iterations_.data(), iterations_.bytes());
    if (host_.residual_history != nullptr)
      cuda::copy_to_host(host_.residual_history, history_.data(), history_.bytes());
    if (host_.diagnostics.relative_residual != nullptr)
      cuda::copy_to_host(host_.diagnostics.relative_residual, residual_.data(), residual_.bytes());
  }

 private:
  static BatchView<const Real> upload(BatchView<const Real> view, std::size_t bytes,
                                      cuda::DeviceBuffer& buffer) {
    buffer = cuda::DeviceBuffer(bytes);
    cuda::copy_to_device(buffer.data(), view.data, bytes);
    return {buffer.as<const Real>(), view.batch, view.n, MemorySpace::device};
  }

  BackwardResult<Real> host_;
  BackwardProblem<Real> problem_;
  BackwardResult<Real> result_;
  cuda::DeviceBuffer M_, R_, G_, grad_, status_, iterations_, history_, residual_;
};

}  // namespace

void require_cuda() {
  cuda::require_device();
}

void synchronize(const std::string& what) {
  cuda::synchronize(what);
}

template <class Real>
void solve_staged(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                  const DeviceSolve<Real>& solve, const std::string& what) {
  const StagedSolve<Real> staged(problem, result);
  solve(staged.problem(), staged.result());
  cuda::synchronize(what);
  staged.download();
}

template void solve_staged(const BackwardProblem<float>&, const BackwardResult<float>&,
                           const DeviceSolve<float>&, const std::string&);
template void solve_staged(const BackwardProblem<double>&, const BackwardResult<double>&,
                           const DeviceSolve<double>&, const std::string&);

template <class Real>
void store_diagnostics(BatchView<const Real> R, const SolveDiagnostics<Real>& diagnostics,
                       void* stream) {
  cuda::store_diagnostics(R, diagnostics, stream);
}

template void store_diagnostics(BatchView<const float>, const SolveDiagnostics<float>&, void*);
template void store_diagnostics(BatchView<const double>, const SolveDiagnostics<double>&, void*);

}  // namespace sinkgrad::device
