// The C ABI of experiments/capi/sinkgrad_c.h: argument checks, views of the caller's memory,
// and every exception turned into a return code and a message.

#include "experiments/capi/sinkgrad_c.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "core/plugin_loader.hpp"
#include "core/solver_options.hpp"
#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace {

using namespace sinkgrad;

// status is handed to the solver as SolveStatus*: the caller's int32 storage must match it.
static_assert(std::is_same_v<std::underlying_type_t<SolveStatus>, std::int32_t>);
static_assert(sizeof(SolveStatus) == sizeof(std::int32_t));

thread_local std::string last_error;

void set_last_error(const char* function, const char* message) noexcept {
  try {
    last_error = std::string(function) + ": " + message;
  } catch (...) {  // no memory even for the message: an empty one rather than a throw
    last_error.clear();
  }
}

// Runs body; any exception becomes return code 1 and this thread's last error.
template <class Body>
int guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return 0;
  } catch (const std::bad_alloc&) {
    set_last_error(function, "out of memory");
  } catch (const std::exception& error) {
    set_last_error(function, error.what());
  } catch (...) {
    set_last_error(function, "unknown exception");
  }
  return 1;
}

Device device_of(int device) {
  if (device == SINKGRAD_C_CPU) return Device::cpu;
  if (device == SINKGRAD_C_CUDA) return Device::cuda;
  throw Error("device must be 0 (cpu) or 1 (cuda), got " + std::to_string(device));
}

void check_dtype(int dtype) {
  if (dtype != SINKGRAD_C_FLOAT32 && dtype != SINKGRAD_C_FLOAT64)
    throw Error("dtype must be 4 (float32) or 8 (float64), got " + std::to_string(dtype));
}

void check_shape(std::int64_t batch, int n, int T) {
  if (batch < 0) throw Error("batch must be >= 0, got " + std::to_string(batch));
  if (n < 1) throw Error("n must be >= 1, got " + std::to_string(n));
  if (T < 1) throw Error("T must be >= 1, got " + std::to_string(T));
}

void require(const void* pointer, const char* name, std::int64_t batch) {
  if (pointer == nullptr && batch > 0) throw Error(std::string(name) + " is NULL");
}

// "key=value,key=value" (spaces around keys and values ignored) into the registry's map.
std::map<std::string, std::string> parse_options(const char* text) {
  const auto trim = [](const std::string& s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return std::string();
    return s.substr(first, s.find_last_not_of(" \t") - first + 1);
  };
  std::map<std::string, std::string> options;
  const std::string all = text == nullptr ? "" : text;
  if (trim(all).empty()) return options;
  for (std::size_t start = 0; start <= all.size();) {
    const std::size_t end = std::min(all.find(',', start), all.size());
    const auto [key, value] = parse_key_value(trim(all.substr(start, end - start)));
    if (!options.emplace(trim(key), trim(value)).second)
      throw Error("option " + trim(key) + " is given more than once in '" + all + "'");
    start = end + 1;
  }
  return options;
}

// Solvers by (name, options), created on first use and kept until exit (never destroyed, like
// the registry), so that repeated calls from a timing loop skip creation.
const BackwardSolver& cached_solver(const std::string& name,
                                    const std::map<std::string, std::string>& options) {
  using Key = std::pair<std::string, std::map<std::string, std::string>>;
  static auto* cache = new std::map<Key, std::unique_ptr<BackwardSolver>>;
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  Key key{name, options};
  auto it = cache->find(key);
  if (it == cache->end())
    it = cache->emplace(std::move(key), SolverRegistry::global().create(name, options)).first;
  return *it->second;
}

template <class Real>
BatchView<Real> view(void* data, std::int64_t batch, int n, MemorySpace space) {
  return {static_cast<Real*>(data), batch, n, space};
}

template <class Real>
BatchView<const Real> view(const void* data, std::int64_t batch, int n, MemorySpace space) {
  return {static_cast<const Real*>(data), batch, n, space};
}

template <class Real>
void forward_async(std::int64_t batch, int n, int T, const void* logits, void* R, void* stream,
                   const ForwardSpec& spec = {}) {
  sinkhorn_forward_async<Real>(view<Real>(logits, batch, n, MemorySpace::device), T,
                               view<Real>(R, batch, n, MemorySpace::device), stream, spec);
}

template <class Real>
void forward(Device device, std::int64_t batch, int n, int T, const void* logits, void* R,
             const ForwardSpec& spec) {
  const MemorySpace space = device == Device::cuda ? MemorySpace::device : MemorySpace::host;
  sinkhorn_forward<Real>(view<Real>(logits, batch, n, space), T, view<Real>(R, batch, n, space),
                         nullptr, device, spec);
}

ForwardSpec spec_of(const char* convention, double eps) {
  return make_forward_spec(convention == nullptr ? "columns_first" : convention, eps);
}

// wait: BackwardSolver::solve on `device` (waits for the GPU); otherwise solve_async, device
// memory on cuda, launched on `stream` without waiting.
template <class Real>
void solve(const BackwardSolver& solver, Device device, std::int64_t batch, int n, int T,
           const void* logits, const void* R, const void* G, void* grad, std::int32_t* status,
           std::int32_t* iterations, const ForwardSpec& spec, void* stream = nullptr,
           bool wait = true) {
  const MemorySpace space = device == Device::cuda ? MemorySpace::device : MemorySpace::host;
  // Without logits the view stays empty (B = 0, null), which the solver reads as "not given".
  const BatchView<const Real> M =
      logits != nullptr ? view<Real>(logits, batch, n, space) : BatchView<const Real>{};
  const BackwardProblem<Real> problem{
      M, view<Real>(R, batch, n, space), view<Real>(G, batch, n, space), T, spec, stream};
  const BackwardResult<Real> result{view<Real>(grad, batch, n, space),
                                    reinterpret_cast<SolveStatus*>(status), iterations};
  if (wait)
    solver.solve(problem, result, device);
  else
    solver.solve_async(problem, result);
}

void check_solve_arguments(std::int64_t batch, int n, int T, const void* R, const void* G,
                           const void* grad, const void* status, const void* iterations) {
  check_shape(batch, n, T);
  require(R, "R", batch);
  require(G, "G", batch);
  require(grad, "grad", batch);
  require(status, "status", batch);
  require(iterations, "iterations", batch);
}

}  // namespace

extern "C" {

const char* sinkgrad_last_error(void) {
  return last_error.c_str();
}

int sinkgrad_forward(int device, int dtype, int64_t batch, int n, int T, const void* logits,
                     void* R) {
  return sinkgrad_forward_convention(device, dtype, batch, n, T, nullptr, 0.0, logits, R);
}

int sinkgrad_forward_convention(int device, int dtype, int64_t batch, int n, int T,
                                const char* convention, double eps, const void* logits, void* R) {
  return guarded("sinkgrad_forward", [&] {
    const ForwardSpec spec = spec_of(convention, eps);
    const Device on = device_of(device);
    check_dtype(dtype);
    check_shape(batch, n, T);
    require(logits, "logits", batch);
    require(R, "R", batch);
    if (dtype == SINKGRAD_C_FLOAT32)
      forward<float>(on, batch, n, T, logits, R, spec);
    else
      forward<double>(on, batch, n, T, logits, R, spec);
  });
}

int sinkgrad_solve(const char* solver, const char* options, int device, int dtype, int64_t batch,
                   int n, int T, const void* logits, const void* R, const void* G, void* grad,
                   int32_t* status, int32_t* iterations) {
  return sinkgrad_solve_convention(solver, options, device, dtype, batch, n, T, nullptr, 0.0,
                                   logits, R, G, grad, status, iterations);
}

int sinkgrad_solve_convention(const char* solver, const char* options, int device, int dtype,
                              int64_t batch, int n, int T, const char* convention, double eps,
                              const void* logits, const void* R, const void* G, void* grad,
                              int32_t* status, int32_t* iterations) {
  return guarded("sinkgrad_solve", [&] {
    const ForwardSpec spec = spec_of(convention, eps);
    if (solver == nullptr) throw Error("solver is NULL");
    const BackwardSolver& s = cached_solver(solver, parse_options(options));
    const Device on = device_of(device);
    check_dtype(dtype);
    check_solve_arguments(batch, n, T, R, G, grad, status, iterations);
    if (dtype == SINKGRAD_C_FLOAT32)
      solve<float>(s, on, batch, n, T, logits, R, G, grad, status, iterations, spec);
    else
      solve<double>(s, on, batch, n, T, logits, R, G, grad, status, iterations, spec);
  });
}

int sinkgrad_forward_async(int dtype, int64_t batch, int n, int T, const void* logits, void* R,
                           void* stream) {
  return sinkgrad_forward_convention_async(dtype, batch, n, T, nullptr, 0.0, logits, R, stream);
}

int sinkgrad_forward_convention_async(int dtype, int64_t batch, int n, int T,
                                      const char* convention, double eps, const void* logits,
                                      void* R, void* stream) {
  return guarded("sinkgrad_forward_async", [&] {
    const ForwardSpec spec = spec_of(convention, eps);
    check_dtype(dtype);
    check_shape(batch, n, T);
    require(logits, "logits", batch);
    require(R, "R", batch);
    if (dtype == SINKGRAD_C_FLOAT32)
      forward_async<float>(batch, n, T, logits, R, stream, spec);
    else
      forward_async<double>(batch, n, T, logits, R, stream, spec);
  });
}

int sinkgrad_solve_async(const char* solver, const char* options, int dtype, int64_t batch, int n,
                         int T, const void* logits, const void* R, const void* G, void* grad,
                         int32_t* status, int32_t* iterations, void* stream) {
  return sinkgrad_solve_convention_async(solver, options, dtype, batch, n, T, nullptr, 0.0, logits,
                                         R, G, grad, status, iterations, stream);
}

int sinkgrad_solve_convention_async(const char* solver, const char* options, int dtype,
                                    int64_t batch, int n, int T, const char* convention, double eps,
                                    const void* logits, const void* R, const void* G, void* grad,
                                    int32_t* status, int32_t* iterations, void* stream) {
  return guarded("sinkgrad_solve_async", [&] {
    const ForwardSpec spec = spec_of(convention, eps);
    if (solver == nullptr) throw Error("solver is NULL");
    const BackwardSolver& s = cached_solver(solver, parse_options(options));
    check_dtype(dtype);
    check_solve_arguments(batch, n, T, R, G, grad, status, iterations);
    if (dtype == SINKGRAD_C_FLOAT32)
      solve<float>(s, Device::cuda, batch, n, T, logits, R, G, grad, status, iterations, spec,
                   stream, false);
    else
      solve<double>(s, Device::cuda, batch, n, T, logits, R, G, grad, status, iterations, spec,
                    stream, false);
  });
}

int sinkgrad_check_solver(const char* solver, const char* options, int device, int dtype) {
  return guarded("sinkgrad_check_solver", [&] {
    if (solver == nullptr) throw Error("solver is NULL");
    const BackwardSolver& s = cached_solver(solver, parse_options(options));
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
    load_plugin(path);
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
