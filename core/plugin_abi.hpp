#pragma once
// The contract between sinkgrad and a solver plugin: a shared library that exports two C
// functions, found by name with dlsym when the library is loaded (core/plugin_loader.hpp).
//
//     int sinkgrad_plugin_abi_version(void);   // returns SINKGRAD_PLUGIN_ABI_VERSION
//     int sinkgrad_plugin_register(sinkgrad::SolverRegistry* registry);   // 0 on success
//
// A plugin writes them with SINKGRAD_PLUGIN(register_function), which compiles the ABI version
// of the headers it was built against into the library and turns exceptions thrown by the
// registration (a bad SolverInfo, for example) into a message the loader reports.
//
// The solver classes cross the library boundary as C++ objects (BackwardSolver's vtable,
// SolverInfo, std::function), so a plugin must be built against the same sinkgrad headers and
// with a compatible C++ standard library. SINKGRAD_PLUGIN_ABI_VERSION is raised whenever a
// header a plugin sees changes in a way that breaks already-built plugins; the loader refuses
// a plugin built for another version instead of letting it crash.

#include <exception>
#include <string>

namespace sinkgrad {
class SolverRegistry;
}

// 2: BackwardProblem::stream; 3: BackwardResult::diagnostics; 4: OptionSpec::maximum;
// 5: BackwardResult::iterates, BackwardSolver::reports_iterates and from_plugin;
// 6: SolverInfo::log_base_gradient; 7: SolverInfo::cuda_carry_max_n
#define SINKGRAD_PLUGIN_ABI_VERSION 7

#if defined(_WIN32)
#define SINKGRAD_PLUGIN_EXPORT extern "C" __declspec(dllexport)
#else
#define SINKGRAD_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace sinkgrad::plugin_abi {

// The exported names, shared by SINKGRAD_PLUGIN and the loader so that they cannot drift.
inline constexpr const char* version_symbol = "sinkgrad_plugin_abi_version";
inline constexpr const char* register_symbol = "sinkgrad_plugin_register";
inline constexpr const char* error_symbol = "sinkgrad_plugin_last_error";

}  // namespace sinkgrad::plugin_abi

// Defines the plugin's entry points around `void register_function(sinkgrad::SolverRegistry&)`.
// Use it once, at global namespace scope, in one source file of the plugin, followed by ';'. The
// optional third entry point hands the loader the message of an exception thrown by the
// registration.
#define SINKGRAD_PLUGIN(register_function)                                                    \
  static std::string& sinkgrad_plugin_error_message() {                                       \
    static std::string message;                                                               \
    return message;                                                                           \
  }                                                                                           \
  SINKGRAD_PLUGIN_EXPORT int sinkgrad_plugin_abi_version(void) {                              \
    return SINKGRAD_PLUGIN_ABI_VERSION;                                                       \
  }                                                                                           \
  SINKGRAD_PLUGIN_EXPORT const char* sinkgrad_plugin_last_error(void) {                       \
    return sinkgrad_plugin_error_message().c_str();                                           \
  }                                                                                           \
  SINKGRAD_PLUGIN_EXPORT int sinkgrad_plugin_register(::sinkgrad::SolverRegistry* registry) { \
    try {                                                                                     \
      register_function(*registry);                                                           \
      return 0;                                                                               \
    } catch (const std::exception& error) {                                                   \
      sinkgrad_plugin_error_message() = error.what();                                         \
    } catch (...) {                                                                           \
      sinkgrad_plugin_error_message() = "an exception that is not a std::exception";          \
    }                                                                                         \
    return 1;                                                                                 \
  }                                                                                           \
  static_assert(SINKGRAD_PLUGIN_ABI_VERSION > 0, "plugin ABI versions start at 1")
