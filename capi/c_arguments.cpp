#include "capi/c_arguments.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/plugin_loader.hpp"
#include "core/solver_options.hpp"
#include "core/solver_registry.hpp"
#include "sinkgrad/sinkgrad_c.h"

namespace sinkgrad::capi {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

void set_last_error(const char* function, const char* message) noexcept {
  try {
    last_error() = std::string(function) + ": " + message;
  } catch (...) {  // no memory even for the message: an empty one rather than a throw
    last_error().clear();
  }
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
  limits::check_batch_shape(batch, n);
  limits::check_forward_iterations(T);
}

void require(const void* pointer, const char* name, std::int64_t batch) {
  if (pointer == nullptr && batch > 0) throw Error(std::string(name) + " is NULL");
}

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

void load_plugin_path() {
  // A function-local static: loaded once per process, thread-safe, the outcome kept.
  static const std::string refusal = [] {
    try {
      load_configured_plugins({});
      return std::string();
    } catch (const std::exception& error) {
      return std::string(error.what());
    }
  }();
  if (!refusal.empty()) throw Error(refusal);
}

std::shared_ptr<const BackwardSolver> cached_solver(
    const std::string& name, const std::map<std::string, std::string>& options) {
  load_plugin_path();
  using Key = std::pair<std::string, std::map<std::string, std::string>>;
  struct Kept {
    std::shared_ptr<const BackwardSolver> solver;
    std::uint64_t last_use;
  };
  // Never destroyed, like the registry: no exit-time order between the two.
  static auto* cache = new std::map<Key, Kept>;
  static std::uint64_t clock = 0;
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  Key key{name, options};
  auto it = cache->find(key);
  if (it == cache->end()) {
    std::shared_ptr<const BackwardSolver> solver = SolverRegistry::global().create(name, options);
    if (cache->size() >= solver_cache_capacity)  // the least recently used goes
      cache->erase(std::min_element(cache->begin(), cache->end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      }));
    it = cache->emplace(std::move(key), Kept{std::move(solver), 0}).first;
  }
  it->second.last_use = ++clock;
  return it->second.solver;
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

ForwardSpec spec_of(const char* convention, double eps) {
  return make_forward_spec(convention == nullptr ? "columns_first" : convention, eps);
}

}  // namespace sinkgrad::capi
