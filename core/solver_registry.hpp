#pragma once
// Creates solvers by name with key=value options (PETSc's KSPRegister / -ksp_type in small).

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/backward_solver.hpp"

namespace sinkgrad {

class SolverRegistry {
 public:
  using Factory = std::function<std::unique_ptr<BackwardSolver>(const OptionValues&)>;

  // The process-wide registry; the built-in solvers are in it once libsinkgrad is loaded.
  // Every member may be called from several threads at once (a plugin may be loaded while
  // other threads create solvers); an entry, once added, stays where it is until exit.
  static SolverRegistry& global();

  // Throws Error when the name is taken, or when a name of the solver or its options is
  // refused (core/solver_names.hpp: check_solver_info).
  void add(SolverInfo info, Factory factory);

  bool contains(const std::string& name) const;
  const SolverInfo& info(const std::string& name) const;  // throws for an unknown name
  std::vector<std::string> names() const;                 // sorted

  // Validates the options against the solver's specs; unknown names and options are rejected
  // with a message listing what exists.
  std::unique_ptr<BackwardSolver> create(
      const std::string& name, const std::map<std::string, std::string>& options = {}) const;

 private:
  struct Entry {
    SolverInfo info;
    Factory factory;
  };
  const Entry& entry(const std::string& name) const;  // the caller holds mutex_
  mutable std::shared_mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace sinkgrad
