// The exact fallback's C functions (include/sinkgrad/sinkgrad_c.h): sinkgrad_replace_failures
// and its stream-ordered form, over replace_by_unrolled in its keep mode.

#include "capi/fallback_c.hpp"

#include "capi/c_arguments.hpp"
#include "core/device_runtime.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "sinkgrad/sinkgrad_c.h"
#include "solvers/unrolled/unrolled_fallback.hpp"

namespace sinkgrad::capi {

template <class Real>
void replace_failures(Device device, std::int64_t batch, int n, int T, const void* logits,
                      const void* G, void* grad, const std::int32_t* status,
                      const ForwardSpec& spec, void* stream, bool wait) {
  const MemorySpace space = space_of(device);
  const BackwardProblem<Real> problem{view<Real>(logits, batch, n, space),
                                      {nullptr, batch, n, space},
                                      view<Real>(G, batch, n, space),
                                      T,
                                      spec,
                                      stream};
  // The keep mode reads the statuses and writes neither them nor the iterations.
  const BackwardResult<Real> result{
      {static_cast<Real*>(grad), batch, n, space},
      reinterpret_cast<SolveStatus*>(const_cast<std::int32_t*>(status)),
      nullptr};
  if (device == Device::cuda) device::require_cuda();
  replace_by_unrolled(problem, result, device, FallbackStatus::keep);
  if (device == Device::cuda && wait) device::synchronize("the exact fallback on cuda");
}

template void replace_failures<float>(Device, std::int64_t, int, int, const void*, const void*,
                                      void*, const std::int32_t*, const ForwardSpec&, void*, bool);
template void replace_failures<double>(Device, std::int64_t, int, int, const void*, const void*,
                                       void*, const std::int32_t*, const ForwardSpec&, void*, bool);

}  // namespace sinkgrad::capi

namespace {

using namespace sinkgrad;
using namespace sinkgrad::capi;

// Both entry points: their checks in order, then the fallback in the precision dtype names.
// stream_ordered: on cuda without waiting, `device` not read.
int replace_failures_checked(const char* function, int device, bool stream_ordered, int dtype,
                             std::int64_t batch, int n, int T, const char* convention, double eps,
                             const void* logits, const void* G, void* grad,
                             const std::int32_t* status, void* stream) {
  return guarded(function, [&] {
    const Device on = stream_ordered ? Device::cuda : device_of(device);
    const ForwardSpec spec = spec_of(convention, eps);
    const bool wait = !stream_ordered;
    check_dtype(dtype);
    check_shape(batch, n, T);
    require(logits, "logits", batch);
    require(G, "G", batch);
    require(grad, "grad", batch);
    require(status, "status", batch);
    // Not through BackwardSolver::solve, which refuses a thread count libgomp would crash on.
    if (on == Device::cpu) limits::check_thread_count();
    if (dtype == SINKGRAD_C_FLOAT32)
      replace_failures<float>(on, batch, n, T, logits, G, grad, status, spec, stream, wait);
    else
      replace_failures<double>(on, batch, n, T, logits, G, grad, status, spec, stream, wait);
  });
}

}  // namespace

extern "C" {

int sinkgrad_replace_failures(int device, int dtype, int64_t batch, int n, int T,
                              const char* convention, double eps, const void* logits, const void* G,
                              void* grad, const int32_t* status) {
  return replace_failures_checked("sinkgrad_replace_failures", device, false, dtype, batch, n, T,
                                  convention, eps, logits, G, grad, status, nullptr);
}

int sinkgrad_replace_failures_async(int dtype, int64_t batch, int n, int T, const char* convention,
                                    double eps, const void* logits, const void* G, void* grad,
                                    const int32_t* status, void* stream) {
  return replace_failures_checked("sinkgrad_replace_failures_async", 0, true, dtype, batch, n, T,
                                  convention, eps, logits, G, grad, status, stream);
}

}  // extern "C"
