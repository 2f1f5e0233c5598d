// The C ABI of include/sinkgrad/sinkgrad_c.h: argument checks, views of the caller's memory,
// and every exception turned into a return code and a message.

#include "sinkgrad/sinkgrad_c.h"

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "capi/c_arguments.hpp"
#include "capi/fallback_c.hpp"
#include "core/error.hpp"
#include "core/forward_spec.hpp"
#include "core/plugin_loader.hpp"
#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace {

using namespace sinkgrad;
using namespace sinkgrad::capi;

// status is handed to the solver as SolveStatus*: the caller's int32 storage must match it.
static_assert(std::is_same_v<std::underlying_type_t<SolveStatus>, std::int32_t>);
static_assert(sizeof(SolveStatus) == sizeof(std::int32_t));

// stream_ordered: the forward launched on `stream` without waiting (device memory), else a
// waiting forward on `device`.
template <class Real>
void forward(Device device, bool stream_ordered, std::int64_t batch, int n, int T,
             const void* logits, void* R, void* stream, const ForwardSpec& spec) {
  const MemorySpace space = space_of(device);
  if (stream_ordered)
    sinkhorn_forward_async<Real>(view<Real>(logits, batch, n, space), T,
                                 view<Real>(R, batch, n, space), stream, spec);
  else
    sinkhorn_forward<Real>(view<Real>(logits, batch, n, space), T, view<Real>(R, batch, n, space),
                           nullptr, device, spec);
}

// Both forward entry points: their checks in order, then the forward in the precision dtype
// names. stream_ordered: on cuda, `device` not read.
int checked_forward(const char* function, int device, bool stream_ordered, int dtype,
                    std::int64_t batch, int n, int T, const char* convention, double eps,
                    const void* logits, void* R, void* stream) {
  return guarded(function, [&] {
    const ForwardSpec spec = spec_of(convention, eps);
    const Device on = stream_ordered ? Device::cuda : device_of(device);
    check_dtype(dtype);
    check_shape(batch, n, T);
    require(logits, "logits", batch);
    require(R, "R", batch);
    if (dtype == SINKGRAD_C_FLOAT32)
      forward<float>(on, stream_ordered, batch, n, T, logits, R, stream, spec);
    else
      forward<double>(on, stream_ordered, batch, n, T, logits, R, stream, spec);
  });
}

// The diagnostics' four arrays as the C functions take them (any may be null).
struct CDiagnostics {
  void* row_violation = nullptr;
  void* column_violation = nullptr;
  void* relative_residual = nullptr;
  std::int32_t* zero_entries = nullptr;
};

// wait: BackwardSolver::solve on `device` (waits for the GPU); otherwise solve_async, device
// memory on cuda, launched on `stream` without waiting. replace: then the exact fallback on the
// same arrays (fallback_c.hpp), waited for alike.
template <class Real>
void solve(const BackwardSolver& solver, Device device, std::int64_t batch, int n, int T,
           const void* logits, const void* R, const void* G, void* grad, std::int32_t* status,
           std::int32_t* iterations, const ForwardSpec& spec, void* stream, bool wait,
           const CDiagnostics& diagnostics, bool replace) {
  const MemorySpace space = space_of(device);
  // Without logits the view stays empty (B = 0, null), which the solver reads as "not given".
  const BatchView<const Real> M =
      logits != nullptr ? view<Real>(logits, batch, n, space) : BatchView<const Real>{};
  const BackwardProblem<Real> problem{
      M, view<Real>(R, batch, n, space), view<Real>(G, batch, n, space), T, spec, stream};
  BackwardResult<Real> result{view<Real>(grad, batch, n, space),
                              reinterpret_cast<SolveStatus*>(status), iterations};
  result.diagnostics = {static_cast<Real*>(diagnostics.row_violation),
                        static_cast<Real*>(diagnostics.column_violation),
                        static_cast<Real*>(diagnostics.relative_residual),
                        diagnostics.zero_entries};
  if (wait)
    solver.solve(problem, result, device);
  else
    solver.solve_async(problem, result);
  if (replace)
    replace_failures<Real>(device, batch, n, T, logits, G, grad, status, spec, stream, wait);
}

// replace as the C ABI takes it: 0 or 1.
bool replace_flag(int replace) {
  if (replace != 0 && replace != 1)
    throw Error("replace must be 0 (keep failed matrices) or 1 (the exact fallback), got " +
                std::to_string(replace));
  return replace == 1;
}

// Every solve entry point: its checks in order, then the solve in the precision dtype names,
// then, when `replace`, the exact fallback for the matrices it failed (sinkgrad_backward).
// stream_ordered: solve_async on cuda (device is not read), else a waiting solve on `device`.
int checked_solve(const char* function, const char* solver, const char* options, int device,
                  bool stream_ordered, int dtype, std::int64_t batch, int n, int T,
                  const char* convention, double eps, const void* logits, const void* R,
                  const void* G, void* grad, std::int32_t* status, std::int32_t* iterations,
                  const CDiagnostics& diagnostics, void* stream, int replace_code = 0) {
  return guarded(function, [&] {
    const ForwardSpec spec = spec_of(convention, eps);
    const bool replace = replace_flag(replace_code);
    if (solver == nullptr) throw Error("solver is NULL");
    const std::shared_ptr<const BackwardSolver> held =
        cached_solver(solver, parse_options(options));
    const BackwardSolver& s = *held;
    const Device on = stream_ordered ? Device::cuda : device_of(device);
    check_dtype(dtype);
    check_solve_arguments(batch, n, T, R, G, grad, status, iterations);
    // The fallback replays the forward: refused before the solve writes anything.
    if (replace) require(logits, "logits (the fallback replays the forward)", batch);
    if (dtype == SINKGRAD_C_FLOAT32)
      solve<float>(s, on, batch, n, T, logits, R, G, grad, status, iterations, spec, stream,
                   !stream_ordered, diagnostics, replace);
    else
      solve<double>(s, on, batch, n, T, logits, R, G, grad, status, iterations, spec, stream,
                    !stream_ordered, diagnostics, replace);
  });
}

}  // namespace

extern "C" {

const char* sinkgrad_last_error(void) {
  return last_error().c_str();
}

int sinkgrad_forward(int device, int dtype, int64_t batch, int n, int T, const void* logits,
                     void* R) {
  return checked_forward("sinkgrad_forward", device, false, dtype, batch, n, T, nullptr, 0.0,
                         logits, R, nullptr);
}

int sinkgrad_forward_convention(int device, int dtype, int64_t batch, int n, int T,
                                const char* convention, double eps, const void* logits, void* R) {
  return checked_forward("sinkgrad_forward_convention", device, false, dtype, batch, n, T,
                         convention, eps, logits, R, nullptr);
}

int sinkgrad_solve(const char* solver, const char* options, int device, int dtype, int64_t batch,
                   int n, int T, const void* logits, const void* R, const void* G, void* grad,
                   int32_t* status, int32_t* iterations) {
  return checked_solve("sinkgrad_solve", solver, options, device, false, dtype, batch, n, T,
                       nullptr, 0.0, logits, R, G, grad, status, iterations, {}, nullptr);
}

int sinkgrad_solve_convention(const char* solver, const char* options, int device, int dtype,
                              int64_t batch, int n, int T, const char* convention, double eps,
                              const void* logits, const void* R, const void* G, void* grad,
                              int32_t* status, int32_t* iterations) {
  return checked_solve("sinkgrad_solve_convention", solver, options, device, false, dtype, batch, n,
                       T, convention, eps, logits, R, G, grad, status, iterations, {}, nullptr);
}

int sinkgrad_solve_diagnosed(const char* solver, const char* options, int device, int dtype,
                             int64_t batch, int n, int T, const char* convention, double eps,
                             const void* logits, const void* R, const void* G, void* grad,
                             int32_t* status, int32_t* iterations, void* row_violation,
                             void* column_violation, void* relative_residual,
                             int32_t* zero_entries) {
  return checked_solve("sinkgrad_solve_diagnosed", solver, options, device, false, dtype, batch, n,
                       T, convention, eps, logits, R, G, grad, status, iterations,
                       {row_violation, column_violation, relative_residual, zero_entries}, nullptr);
}

int sinkgrad_solve_diagnosed_async(const char* solver, const char* options, int dtype,
                                   int64_t batch, int n, int T, const char* convention, double eps,
                                   const void* logits, const void* R, const void* G, void* grad,
                                   int32_t* status, int32_t* iterations, void* row_violation,
                                   void* column_violation, void* relative_residual,
                                   int32_t* zero_entries, void* stream) {
  return checked_solve("sinkgrad_solve_diagnosed_async", solver, options, 0, true, dtype, batch, n,
                       T, convention, eps, logits, R, G, grad, status, iterations,
                       {row_violation, column_violation, relative_residual, zero_entries}, stream);
}

int sinkgrad_backward(const char* solver, const char* options, int device, int dtype, int64_t batch,
                      int n, int T, const char* convention, double eps, const void* logits,
                      const void* R, const void* G, void* grad, int32_t* status,
                      int32_t* iterations, void* row_violation, void* column_violation,
                      void* relative_residual, int32_t* zero_entries, int replace) {
  return checked_solve("sinkgrad_backward", solver, options, device, false, dtype, batch, n, T,
                       convention, eps, logits, R, G, grad, status, iterations,
                       {row_violation, column_violation, relative_residual, zero_entries}, nullptr,
                       replace);
}

int sinkgrad_backward_async(const char* solver, const char* options, int dtype, int64_t batch,
                            int n, int T, const char* convention, double eps, const void* logits,
                            const void* R, const void* G, void* grad, int32_t* status,
                            int32_t* iterations, void* row_violation, void* column_violation,
                            void* relative_residual, int32_t* zero_entries, int replace,
                            void* stream) {
  return checked_solve("sinkgrad_backward_async", solver, options, 0, true, dtype, batch, n, T,
                       convention, eps, logits, R, G, grad, status, iterations,
                       {row_violation, column_violation, relative_residual, zero_entries}, stream,
                       replace);
}

int sinkgrad_forward_async(int dtype, int64_t batch, int n, int T, const void* logits, void* R,
                           void* stream) {
  return checked_forward("sinkgrad_forward_async", 0, true, dtype, batch, n, T, nullptr, 0.0,
                         logits, R, stream);
}

int sinkgrad_forward_convention_async(int dtype, int64_t batch, int n, int T,
                                      const char* convention, double eps, const void* logits,
                                      void* R, void* stream) {
  return checked_forward("sinkgrad_forward_convention_async", 0, true, dtype, batch, n, T,
                         convention, eps, logits, R, stream);
}

int sinkgrad_solve_async(const char* solver, const char* options, int dtype, int64_t batch, int n,
                         int T, const void* logits, const void* R, const void* G, void* grad,
                         int32_t* status, int32_t* iterations, void* stream) {
  return checked_solve("sinkgrad_solve_async", solver, options, 0, true, dtype, batch, n, T,
                       nullptr, 0.0, logits, R, G, grad, status, iterations, {}, stream);
}

int sinkgrad_solve_convention_async(const char* solver, const char* options, int dtype,
                                    int64_t batch, int n, int T, const char* convention, double eps,
                                    const void* logits, const void* R, const void* G, void* grad,
                                    int32_t* status, int32_t* iterations, void* stream) {
  return checked_solve("sinkgrad_solve_convention_async", solver, options, 0, true, dtype, batch, n,
                       T, convention, eps, logits, R, G, grad, status, iterations, {}, stream);
}

int sinkgrad_check_solver(const char* solver, const char* options, int device, int dtype) {
  return guarded("sinkgrad_check_solver", [&] {
    if (solver == nullptr) throw Error("solver is NULL");
    const std::shared_ptr<const BackwardSolver> held =
        cached_solver(solver, parse_options(options));
    const BackwardSolver& s = *held;
    const Device on = device_of(device);
    check_dtype(dtype);
    const Precision precision =
        dtype == SINKGRAD_C_FLOAT32 ? Precision::float32 : Precision::float64;
    if (!s.info().supports(precision))
      throw Error("solver '" + s.name() + "' does not support " +
                  std::string(to_string(precision)));
    if (!s.info().supports(on))
      throw Error("solver '" + s.name() + "' does not run on " + std::string(to_string(on)) +
                  (on == Device::cuda ? " in this build" : ""));
  });
}

int sinkgrad_load_plugin(const char* path) {
  return guarded("sinkgrad_load_plugin", [&] {
    if (path == nullptr) throw Error("path is NULL");
    load_plugin_path();  // SINKGRAD_PLUGIN_PATH's plugins first, as the CLI loads them
    load_plugin(path);
  });
}

int sinkgrad_solver_names(const char** names) {
  return guarded("sinkgrad_solver_names", [&] {
    if (names == nullptr) throw Error("names is NULL");
    load_plugin_path();
    thread_local std::string text;
    text.clear();
    for (const auto& name : SolverRegistry::global().names())
      text += (text.empty() ? "" : ",") + name;
    *names = text.c_str();
  });
}

int sinkgrad_load_plugin_n(const char* path, int64_t length) {
  return guarded("sinkgrad_load_plugin_n", [&] {
    if (path == nullptr) throw Error("path is NULL");
    if (length < 0 || length > 65536)
      throw Error("length must be from 0 to 65536, got " + std::to_string(length));
    // A path that ends early at a NUL names another file than the caller meant.
    const std::string text(path, static_cast<std::size_t>(length));
    if (text.find('\0') != std::string::npos)
      throw Error("the path holds a NUL byte at offset " + std::to_string(text.find('\0')) +
                  "; a file name cannot");
    load_plugin_path();  // SINKGRAD_PLUGIN_PATH's plugins first, as the CLI loads them
    load_plugin(text);
  });
}

int sinkgrad_default_eps(const char* convention, double* eps) {
  return guarded("sinkgrad_default_eps", [&] {
    if (eps == nullptr) throw Error("eps is required");
    *eps =
        make_forward_spec(convention == nullptr ? "columns_first" : convention, std::nullopt).eps;
  });
}

int sinkgrad_has_cuda(void) {
#if defined(SINKGRAD_WITH_CUDA)
  return 1;
#else
  return 0;
#endif
}

}  // extern "C"
