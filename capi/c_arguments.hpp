#pragma once
// The arguments of the C ABI (sinkgrad_c.cpp) turned into sinkgrad's types, each check
// throwing sinkgrad::Error with a message the caller reads from sinkgrad_last_error.

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>

#include "core/backward_solver.hpp"
#include "core/batch.hpp"
#include "core/forward_spec.hpp"
#include "core/types.hpp"

namespace sinkgrad::capi {

// This thread's last error message (sinkgrad_last_error), and its setter (never throws).
std::string& last_error();
void set_last_error(const char* function, const char* message) noexcept;

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

// SINKGRAD_C_CPU / SINKGRAD_C_CUDA -> Device.
Device device_of(int device);
// Where the caller's arrays live for a call on `device`: host memory on the cpu, device memory
// on cuda.
inline MemorySpace space_of(Device device) {
  return device == Device::cuda ? MemorySpace::device : MemorySpace::host;
}

// A view of the caller's [batch][n][n] array.
template <class Real>
BatchView<Real> view(void* data, std::int64_t batch, int n, MemorySpace space) {
  return {static_cast<Real*>(data), batch, n, space};
}
template <class Real>
BatchView<const Real> view(const void* data, std::int64_t batch, int n, MemorySpace space) {
  return {static_cast<const Real*>(data), batch, n, space};
}
// SINKGRAD_C_FLOAT32 or SINKGRAD_C_FLOAT64.
void check_dtype(int dtype);
// 0 <= batch, 1 <= n <= 32768, batch n^2 <= 2^56, 1 <= T <= 10^6 (core/limits.hpp).
void check_shape(std::int64_t batch, int n, int T);
// A null pointer is refused unless the batch is empty.
void require(const void* pointer, const char* name, std::int64_t batch);
// The shape and every pointer a solve writes or reads (the logits are optional).
void check_solve_arguments(std::int64_t batch, int n, int T, const void* R, const void* G,
                           const void* grad, const void* status, const void* iterations);

// "key=value,key=value" (spaces around keys and values ignored) into the registry's map.
std::map<std::string, std::string> parse_options(const char* text);

// The plugins of SINKGRAD_PLUGIN_PATH, loaded on the first call that looks solvers up, by the
// function the command-line tool calls (load_configured_plugins), so that the layer and the CLI
// see the same solvers. A refusal is remembered and thrown by every later call, as the CLI
// refuses every command then, rather than a solver going missing without a word.
void load_plugin_path();

// Solvers by (name, options), created on first use and kept, so that repeated calls from a
// timing loop skip creation. At most solver_cache_capacity are kept: past it the least recently
// used one is dropped (a caller's shared_ptr keeps it alive through its call), so a caller that
// sweeps an option through many values does not grow the process without bound. Never null.
inline constexpr std::size_t solver_cache_capacity = 256;
std::shared_ptr<const BackwardSolver> cached_solver(
    const std::string& name, const std::map<std::string, std::string>& options);

// The forward of a convention (null: columns_first) with eps (make_forward_spec checks both).
ForwardSpec spec_of(const char* convention, double eps);

}  // namespace sinkgrad::capi
