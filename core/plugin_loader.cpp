#include "core/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/error.hpp"
#include "core/plugin_abi.hpp"
#include "core/plugin_file_check.hpp"
#include "core/solver_names.hpp"

namespace sinkgrad {
namespace {

namespace fs = std::filesystem;

#if defined(__APPLE__)
constexpr const char* shared_library_suffix = ".dylib";
#else
constexpr const char* shared_library_suffix = ".so";
#endif

// A loaded plugin: its record and the registry its solvers live in (they are added to the
// target registry as forwarding entries).
struct PluginRecord {
  LoadedPlugin loaded;
  std::shared_ptr<SolverRegistry> own_registry;
};

// Process-wide bookkeeping, keyed by target registry; never destroyed, like the plugins.
struct PluginTable {
  std::mutex mutex;
  std::map<const SolverRegistry*, std::vector<PluginRecord>> by_registry;
};

PluginTable& plugin_table() {
  static auto* table = new PluginTable;
  return *table;
}

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

// Calls a plugin's entry point. They are C functions, but a plugin written without
// SINKGRAD_PLUGIN can still let a C++ exception out of one; it becomes an Error naming the
// plugin and the entry point instead of reaching the caller as an anonymous exception.
template <class Call>
auto call_entry_point(const std::string& where, const char* symbol, Call&& call) {
  const std::string prefix = "plugin " + where + ": its entry point " + symbol + " threw ";
  try {
    return call();
  } catch (const std::exception& error) {
    throw Error(prefix + "an exception across the C boundary: " + visible_text(error.what()));
  } catch (...) {
    throw Error(prefix + "something that is not a std::exception across the C boundary");
  }
}

// dlopen handle that is closed unless released (a refused plugin is unloaded again).
class LibraryHandle {
 public:
  explicit LibraryHandle(void* handle) : handle_(handle) {}
  ~LibraryHandle() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;

  template <class Function>
  Function* entry_point(const char* name) const {
    return reinterpret_cast<Function*>(dlsym(handle_, name));
  }
  void release() { handle_ = nullptr; }

 private:
  void* handle_;
};

// Who already owns `name` in the target registry.
std::string owner_of(const std::string& name, const std::vector<PluginRecord>& records) {
  for (const auto& record : records) {
    const auto& solvers = record.loaded.solvers;
    if (std::find(solvers.begin(), solvers.end(), name) != solvers.end())
      return "plugin " + quoted(record.loaded.path);
  }
  return "a built-in solver";
}

// Opens the library, checks its entry points and ABI version, and lets it register into a
// registry of its own. The target registry is not touched.
PluginRecord open_and_register(const std::string& path, const SolverRegistry& target,
                               const std::vector<PluginRecord>& loaded) {
  const std::string where = quoted(path);
  check_plugin_file(path);
  warn_if_world_writable(path);

  dlerror();  // clear a stale message
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw Error("plugin " + where +
                " is a shared library that cannot be loaded: " + (reason ? reason : "unknown"));
  }
  LibraryHandle library(handle);

  using VersionFunction = int();
  using RegisterFunction = int(SolverRegistry*);
  using ErrorFunction = const char*();
  auto* version = library.entry_point<VersionFunction>(plugin_abi::version_symbol);
  auto* add_solvers = library.entry_point<RegisterFunction>(plugin_abi::register_symbol);
  auto* last_error = library.entry_point<ErrorFunction>(plugin_abi::error_symbol);
  if (version == nullptr || add_solvers == nullptr) {
    std::string missing = version == nullptr ? plugin_abi::version_symbol : "";
    if (add_solvers == nullptr)
      missing += std::string(missing.empty() ? "" : " and ") + plugin_abi::register_symbol;
    throw Error("plugin " + where +
                " is a shared library but not a sinkgrad plugin: it does "
                "not export " +
                missing + " (define them with SINKGRAD_PLUGIN(...) from core/plugin_abi.hpp)");
  }
  if (const int found = call_entry_point(where, plugin_abi::version_symbol, version);
      found != SINKGRAD_PLUGIN_ABI_VERSION)
    throw Error("plugin " + where + " was built for sinkgrad plugin ABI version " +
                std::to_string(found) + ", but this sinkgrad loads version " +
                std::to_string(SINKGRAD_PLUGIN_ABI_VERSION) +
                "; rebuild the plugin against this sinkgrad installation");

  auto own_registry = std::make_shared<SolverRegistry>();
  const auto add = [&] { return add_solvers(own_registry.get()); };
  if (call_entry_point(where, plugin_abi::register_symbol, add) != 0) {
    const char* reason = last_error != nullptr
                             ? call_entry_point(where, plugin_abi::error_symbol, last_error)
                             : nullptr;
    throw Error("plugin " + where + " failed to register its solvers: " +
                (reason != nullptr && *reason != '\0' ? visible_text(reason)
                                                      : std::string("it returned an error")));
  }
  const std::vector<std::string> names = own_registry->names();
  if (names.empty()) throw Error("plugin " + where + " registered no solver");
  for (const auto& name : names)
    if (target.contains(name))
      throw Error("plugin " + where + " registers a solver named '" + name +
                  "', but that name is already taken by " + owner_of(name, loaded) +
                  "; rename the solver in the plugin");

  library.release();  // solvers from it are about to be handed out: never unload it
  return {{path, names}, std::move(own_registry)};
}

// Adds the plugin's solvers to the target registry; their factories create them through the
// plugin's own registry, which validates the options once more (cheaply).
void add_to_target(const PluginRecord& record, SolverRegistry& target) {
  for (const auto& name : record.loaded.solvers) {
    std::shared_ptr<SolverRegistry> source = record.own_registry;
    target.add(source->info(name), [source, name](const OptionValues& options) {
      std::unique_ptr<BackwardSolver> solver = source->create(name, options.all());
      mark_from_plugin(*solver);
      return solver;
    });
  }
}

// Records of a registry that no longer holds their solvers describe an earlier registry that
// lived at the same address (registries other than global() come and go, in tests say).
bool is_current(const PluginRecord& record, const SolverRegistry& registry) {
  return std::all_of(record.loaded.solvers.begin(), record.loaded.solvers.end(),
                     [&](const std::string& name) { return registry.contains(name); });
}

void forget_stale_records(std::vector<PluginRecord>& records, const SolverRegistry& registry) {
  std::erase_if(records, [&](const PluginRecord& record) { return !is_current(record, registry); });
}

std::vector<std::string> plugin_files_in(const fs::path& directory) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(directory))
    if (entry.is_regular_file() && entry.path().extension() == shared_library_suffix)
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

LoadedPlugin load_plugin(const std::string& path, SolverRegistry& registry) {
  std::error_code error;
  const fs::path canonical = fs::canonical(path, error);
  if (error) throw Error("plugin '" + path + "': no such file");
  if (fs::is_directory(canonical))
    throw Error("plugin '" + path + "' is a directory; name the shared library inside it");

  PluginTable& table = plugin_table();
  const std::lock_guard<std::mutex> lock(table.mutex);
  std::vector<PluginRecord>& loaded = table.by_registry[&registry];
  forget_stale_records(loaded, registry);
  for (const auto& record : loaded)
    if (record.loaded.path == canonical.string()) return record.loaded;

  PluginRecord record = open_and_register(canonical.string(), registry, loaded);
  add_to_target(record, registry);
  loaded.push_back(record);
  return record.loaded;
}

std::vector<LoadedPlugin> load_plugins(const std::vector<std::string>& entries,
                                       SolverRegistry& registry) {
  std::vector<LoadedPlugin> result;
  for (const auto& entry : entries) {
    std::error_code error;
    if (fs::is_directory(entry, error)) {
      for (const auto& file : plugin_files_in(entry)) result.push_back(load_plugin(file, registry));
    } else {
      result.push_back(load_plugin(entry, registry));
    }
  }
  return result;
}

std::vector<std::string> plugin_path_from_environment() {
  std::vector<std::string> entries;
  const char* value = std::getenv(plugin_path_variable);
  if (value == nullptr) return entries;
  std::string text = value;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(':', start), text.size());
    if (end > start) entries.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return entries;
}

std::vector<LoadedPlugin> load_configured_plugins(
    const std::vector<std::string>& command_line_entries, SolverRegistry& registry) {
  std::vector<LoadedPlugin> loaded;
  try {
    loaded = load_plugins(plugin_path_from_environment(), registry);
  } catch (const Error& error) {
    throw Error(std::string(error.what()) + " (from " + plugin_path_variable + ")");
  }
  const auto more = load_plugins(command_line_entries, registry);
  loaded.insert(loaded.end(), more.begin(), more.end());
  return loaded;
}

std::string plugin_providing(const std::string& name, const SolverRegistry& registry) {
  PluginTable& table = plugin_table();
  const std::lock_guard<std::mutex> lock(table.mutex);
  const auto it = table.by_registry.find(&registry);
  if (it == table.by_registry.end()) return {};
  for (const auto& record : it->second) {
    if (!is_current(record, registry)) continue;
    const auto& solvers = record.loaded.solvers;
    if (std::find(solvers.begin(), solvers.end(), name) != solvers.end()) return record.loaded.path;
  }
  return {};
}

}  // namespace sinkgrad
