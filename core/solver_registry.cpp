#include "core/solver_registry.hpp"

#include <mutex>
#include <shared_mutex>

#include "core/error.hpp"
#include "core/solver_names.hpp"

namespace sinkgrad {

SolverRegistry& SolverRegistry::global() {
  // Never destroyed: plugins may hold factories until exit. The built-in solvers add
  // themselves when the library is loaded (solvers/builtin_solvers.cpp.in).
  static auto* registry = new SolverRegistry;
  return *registry;
}

void SolverRegistry::add(SolverInfo info, Factory factory) {
  check_solver_info(info);
  if (!factory) throw Error("solver '" + info.name + "' has no factory");
  const std::unique_lock lock(mutex_);
  if (entries_.count(info.name) != 0)
    throw Error("a solver named '" + info.name + "' is already registered");
  std::string name = info.name;
  entries_.emplace(std::move(name), Entry{std::move(info), std::move(factory)});
}

bool SolverRegistry::contains(const std::string& name) const {
  const std::shared_lock lock(mutex_);
  return entries_.count(name) != 0;
}

const SolverRegistry::Entry& SolverRegistry::entry(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [key, entry] : entries_) known += (known.empty() ? "" : ", ") + key;
    throw Error("unknown solver '" + name + "' (available: " + known + ")");
  }
  return it->second;
}

// A reference into the map stays valid after the lock is released: std::map moves no node
// when others are inserted, and no entry is ever removed.
const SolverInfo& SolverRegistry::info(const std::string& name) const {
  const std::shared_lock lock(mutex_);
  return entry(name).info;
}

std::vector<std::string> SolverRegistry::names() const {
  const std::shared_lock lock(mutex_);
  std::vector<std::string> result;
  for (const auto& [key, entry] : entries_) result.push_back(key);
  return result;
}

std::unique_ptr<BackwardSolver> SolverRegistry::create(
    const std::string& name, const std::map<std::string, std::string>& options) const {
  // The factory runs without the lock: it is outside code, which may itself use the registry.
  const Entry* found = nullptr;
  {
    const std::shared_lock lock(mutex_);
    found = &entry(name);
  }
  const SolverInfo& solver_info = found->info;
  const OptionValues values = OptionValues::resolve(name, solver_info.options, options);
  // A plugin's factory is outside code: whatever it throws or returns becomes one Error here.
  std::unique_ptr<BackwardSolver> solver;
  try {
    solver = found->factory(values);
  } catch (const Error& error) {
    throw Error("solver '" + name + "' could not be created: " + error.what());
  } catch (const std::exception& error) {
    throw Error("solver '" + name + "' could not be created: " + error.what());
  } catch (...) {
    throw Error("solver '" + name +
                "' could not be created: its factory threw an exception that is not a "
                "std::exception");
  }
  if (!solver) throw Error("solver '" + name + "' could not be created: its factory returned null");
  return solver;
}

}  // namespace sinkgrad
