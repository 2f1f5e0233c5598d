#pragma once
// Loads solver plugins (shared libraries written against core/plugin_abi.hpp) at run time, so
// that a new backward solver needs no change to sinkgrad: the command-line tool loads every
// `--plugin PATH` and every entry of SINKGRAD_PLUGIN_PATH before it looks solvers up by name.
//
// Loading is all or nothing: a plugin first registers into a registry of its own, its solver
// names are checked against the target registry, and only then are its solvers added. A plugin
// is never unloaded (its solvers may be in use until the process exits).

#include <string>
#include <vector>

#include "core/solver_registry.hpp"

namespace sinkgrad {

// Colon-separated list of plugin files or directories.
inline constexpr const char* plugin_path_variable = "SINKGRAD_PLUGIN_PATH";

struct LoadedPlugin {
  std::string path;                  // canonical path of the shared library
  std::vector<std::string> solvers;  // names it registered, sorted
};

// Loads one plugin file into registry and returns what it added. A file already loaded into
// the same registry is not loaded again; its first record is returned. Throws Error naming the
// file when it does not exist, is not a shared library, cannot be loaded (dlopen's reason), has
// no sinkgrad entry points, was built for another plugin ABI version, fails to register or
// registers nothing, or registers a solver whose name is taken (saying by which plugin, or that
// it is built in). Nothing is added to the registry when it throws.
LoadedPlugin load_plugin(const std::string& path,
                         SolverRegistry& registry = SolverRegistry::global());

// Loads each entry in order: a file is loaded as a plugin; a directory contributes the shared
// libraries directly inside it, in name order. Stops at the first refusal (throws Error).
std::vector<LoadedPlugin> load_plugins(const std::vector<std::string>& entries,
                                       SolverRegistry& registry = SolverRegistry::global());

// The entries of SINKGRAD_PLUGIN_PATH, empty ones skipped (none when it is unset).
std::vector<std::string> plugin_path_from_environment();

// What a command calls once before using the registry: the SINKGRAD_PLUGIN_PATH entries, then
// the command line's --plugin entries.
std::vector<LoadedPlugin> load_configured_plugins(
    const std::vector<std::string>& command_line_entries,
    SolverRegistry& registry = SolverRegistry::global());

// The canonical path of the plugin that added solver `name` to registry; empty for a solver
// that no plugin added (a built-in one).
std::string plugin_providing(const std::string& name,
                             const SolverRegistry& registry = SolverRegistry::global());

}  // namespace sinkgrad
