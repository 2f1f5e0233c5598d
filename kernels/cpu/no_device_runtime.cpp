// core/device_runtime.hpp in a build without CUDA: every call refuses.

#include "core/device_runtime.hpp"
#include "core/error.hpp"

namespace sinkgrad::device {
namespace {
[[noreturn]] void no_cuda() {
  throw Error("this build of sinkgrad has no CUDA support (rebuild with nvcc and SINKGRAD_CUDA)");
}
}  // namespace

void require_cuda() {
  no_cuda();
}
void synchronize(const std::string&) {
  no_cuda();
}

template <class Real>
void solve_staged(const BackwardProblem<Real>&, const BackwardResult<Real>&,
                  const DeviceSolve<Real>&, const std::string&) {
  no_cuda();
}

template void solve_staged(const BackwardProblem<float>&, const BackwardResult<float>&,
                           const DeviceSolve<float>&, const std::string&);
template void solve_staged(const BackwardProblem<double>&, const BackwardResult<double>&,
                           const DeviceSolve<double>&, const std::string&);

template <class Real>
void store_diagnostics(BatchView<const Real>, const SolveDiagnostics<Real>&, void*) {
  no_cuda();
}

template void store_diagnostics(BatchView<const float>, const SolveDiagnostics<float>&, void*);
template void store_diagnostics(BatchView<const double>, const SolveDiagnostics<double>&, void*);

template <class Real>
void mark_not_written(const BackwardResult<Real>&, void*) {
  no_cuda();
}
template <class Real>
void check_output(const BackwardResult<Real>&, void*, BreachReport*) {
  no_cuda();
}

template <class Real>
void carry_to_logits(BatchView<const Real>, const ForwardSpec&, const BackwardResult<Real>&,
                     void*) {
  no_cuda();
}

template void carry_to_logits(BatchView<const float>, const ForwardSpec&,
                              const BackwardResult<float>&, void*);
template void carry_to_logits(BatchView<const double>, const ForwardSpec&,
                              const BackwardResult<double>&, void*);
template void mark_not_written(const BackwardResult<float>&, void*);
template void mark_not_written(const BackwardResult<double>&, void*);
template void check_output(const BackwardResult<float>&, void*, BreachReport*);
template void check_output(const BackwardResult<double>&, void*, BreachReport*);

}  // namespace sinkgrad::device
