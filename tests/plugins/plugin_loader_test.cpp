// The plugin loader: loading the example plugin (built against an installed sinkgrad by the
// plugins.build_example fixture), SINKGRAD_PLUGIN_PATH, and each refusal with its message.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/plugin_abi.hpp"
#include "core/plugin_loader.hpp"
#include "core/solver_registry.hpp"
#include "solvers/builtin_solvers.hpp"

namespace sinkgrad::testing {
namespace {

namespace fs = std::filesystem;

const std::string example_plugin = SINKGRAD_TEST_EXAMPLE_PLUGIN;

// A registry like the global one (built-ins included), private to the test.
std::unique_ptr<SolverRegistry> fresh_registry() {
  auto registry = std::make_unique<SolverRegistry>();
  register_builtin_solvers(*registry);
  return registry;
}

// An empty scratch directory for this test.
fs::path scratch_dir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(SINKGRAD_TEST_SCRATCH_DIR) / test->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string canonical(const std::string& path) {
  return fs::canonical(path).string();
}

// Runs load_plugin, expects Error, returns its message.
std::string refusal(const std::string& path, SolverRegistry& registry) {
  try {
    load_plugin(path, registry);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "plugin '" << path << "' was loaded, expected a refusal";
  return {};
}

TEST(PluginLoader, LoadsTheExamplePluginAsAFirstClassSolver) {
  auto registry = fresh_registry();
  const LoadedPlugin loaded = load_plugin(example_plugin, *registry);
  EXPECT_EQ(loaded.path, canonical(example_plugin));
  ASSERT_EQ(loaded.solvers, std::vector<std::string>{"truncated_unrolled"});

  ASSERT_TRUE(registry->contains("truncated_unrolled"));
  const SolverInfo& info = registry->info("truncated_unrolled");
  EXPECT_TRUE(info.supports(Device::cpu));
  EXPECT_TRUE(info.supports(Precision::float32));
  EXPECT_TRUE(info.supports(Precision::float64));
  EXPECT_TRUE(info.needs_logits);
#if defined(SINKGRAD_WITH_CUDA)
  EXPECT_TRUE(info.supports(Device::cuda));
#endif
  ASSERT_EQ(info.options.size(), 1u);
  EXPECT_EQ(info.options[0].name, "k");
  EXPECT_EQ(plugin_providing("truncated_unrolled", *registry), canonical(example_plugin));
  EXPECT_EQ(plugin_providing("unrolled", *registry), "");

  // Options are validated like a built-in solver's.
  EXPECT_EQ(registry->create("truncated_unrolled", {{"k", "3"}})->options().integer("k"), 3);
  EXPECT_THROW(registry->create("truncated_unrolled", {{"k", "0"}}), Error);
  EXPECT_THROW(registry->create("truncated_unrolled", {{"depth", "3"}}), Error);
}

TEST(PluginLoader, LoadingTheSameFileTwiceIsHarmless) {
  auto registry = fresh_registry();
  const auto names_before = registry->names().size();
  load_plugin(example_plugin, *registry);
  const LoadedPlugin again = load_plugin(example_plugin, *registry);
  EXPECT_EQ(again.solvers, std::vector<std::string>{"truncated_unrolled"});
  EXPECT_EQ(registry->names().size(), names_before + 1);
}

TEST(PluginLoader, DirectoriesContributeTheirSharedLibraries) {
  const fs::path dir = scratch_dir();
  fs::copy_file(example_plugin, dir / "libtruncated_unrolled.so");
  std::ofstream(dir / "README.txt") << "not a plugin, and not named like one\n";
  auto registry = fresh_registry();
  const auto loaded = load_plugins({dir.string()}, *registry);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(registry->contains("truncated_unrolled"));
}

TEST(PluginLoader, ReadsSinkgradPluginPath) {
  const fs::path dir = scratch_dir();
  fs::copy_file(example_plugin, dir / "libtruncated_unrolled.so");
  ASSERT_EQ(setenv(plugin_path_variable, ("::" + dir.string() + ":/nowhere/else").c_str(), 1), 0);
  EXPECT_EQ(plugin_path_from_environment(),
            (std::vector<std::string>{dir.string(), "/nowhere/else"}));

  ASSERT_EQ(setenv(plugin_path_variable, dir.string().c_str(), 1), 0);
  auto registry = fresh_registry();
  const auto loaded = load_configured_plugins({}, *registry);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(registry->contains("truncated_unrolled"));

  // The command line's entries come after the environment's; the same file is loaded once.
  const auto both =
      load_configured_plugins({(dir / "libtruncated_unrolled.so").string()}, *registry);
  EXPECT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].path, both[1].path);

  // A refusal of an entry from the environment says where the entry came from.
  ASSERT_EQ(setenv(plugin_path_variable, "/no/such/plugin.so", 1), 0);
  try {
    load_configured_plugins({}, *registry);
    ADD_FAILURE() << "a missing plugin from SINKGRAD_PLUGIN_PATH was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("no such file (from SINKGRAD_PLUGIN_PATH)"),
              std::string::npos)
        << error.what();
  }
  unsetenv(plugin_path_variable);
  EXPECT_TRUE(plugin_path_from_environment().empty());
}

TEST(PluginLoader, RefusesAMissingFile) {
  auto registry = fresh_registry();
  const std::string message = refusal("/no/such/dir/libplugin.so", *registry);
  EXPECT_NE(message.find("'/no/such/dir/libplugin.so'"), std::string::npos) << message;
  EXPECT_NE(message.find("no such file"), std::string::npos) << message;
}

TEST(PluginLoader, RefusesAFileThatIsNotASharedLibrary) {
  const fs::path text = scratch_dir() / "libnotaplugin.so";
  std::ofstream(text) << "# this is a text file with a plugin's name\n";
  auto registry = fresh_registry();
  const std::string message = refusal(text.string(), *registry);
  EXPECT_NE(message.find(canonical(text.string())), std::string::npos) << message;
  EXPECT_NE(message.find("is not a shared library"), std::string::npos) << message;
}

TEST(PluginLoader, RefusesASharedLibraryWithoutEntryPoints) {
  auto registry = fresh_registry();
  const std::string message = refusal(SINKGRAD_TEST_NO_ENTRY_POINT_PLUGIN, *registry);
  EXPECT_NE(message.find("not a sinkgrad plugin"), std::string::npos) << message;
  EXPECT_NE(message.find("sinkgrad_plugin_abi_version and sinkgrad_plugin_register"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("SINKGRAD_PLUGIN"), std::string::npos) << message;
}

TEST(PluginLoader, PassesOnWhyASharedLibraryCannotBeLoaded) {
  auto registry = fresh_registry();
  const std::string message = refusal(SINKGRAD_TEST_UNRESOLVED_SYMBOL_PLUGIN, *registry);
  EXPECT_NE(message.find("is a shared library that cannot be loaded: "), std::string::npos)
      << message;
  EXPECT_NE(message.find("sinkgrad_test_function_that_nobody_defines"), std::string::npos)
      << message;
}

TEST(PluginLoader, RefusesAnAbiMismatch) {
  auto registry = fresh_registry();
  const auto names_before = registry->names();
  const std::string message = refusal(SINKGRAD_TEST_ABI_MISMATCH_PLUGIN, *registry);
  const std::string expected =
      "built for sinkgrad plugin ABI version " + std::to_string(SINKGRAD_PLUGIN_ABI_VERSION + 1) +
      ", but this sinkgrad loads version " + std::to_string(SINKGRAD_PLUGIN_ABI_VERSION);
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_NE(message.find("rebuild the plugin"), std::string::npos) << message;
  EXPECT_EQ(registry->names(), names_before);
}

TEST(PluginLoader, RefusesANameClashWithABuiltInSolverAndAddsNothing) {
  auto registry = fresh_registry();
  const auto names_before = registry->names();
  const std::string message = refusal(SINKGRAD_TEST_NAME_CLASH_PLUGIN, *registry);
  EXPECT_NE(message.find(canonical(SINKGRAD_TEST_NAME_CLASH_PLUGIN)), std::string::npos) << message;
  EXPECT_NE(message.find("solver named 'unrolled'"), std::string::npos) << message;
  EXPECT_NE(message.find("already taken by a built-in solver"), std::string::npos) << message;
  EXPECT_EQ(registry->names(), names_before);  // not even its unique solver
  EXPECT_FALSE(registry->contains("clash_test_unique_name"));
}

TEST(PluginLoader, RefusesANameClashBetweenPluginsNamingTheFirst) {
  const fs::path copy = scratch_dir() / "libtruncated_unrolled_copy.so";
  fs::copy_file(example_plugin, copy);
  auto registry = fresh_registry();
  load_plugin(example_plugin, *registry);
  const std::string message = refusal(copy.string(), *registry);
  EXPECT_NE(message.find("plugin '" + canonical(copy.string()) + "'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("already taken by plugin '" + canonical(example_plugin) + "'"),
            std::string::npos)
      << message;
}

TEST(PluginLoader, ReportsTheMessageOfAFailingRegistration) {
  auto registry = fresh_registry();
  const std::string message = refusal(SINKGRAD_TEST_FAILING_PLUGIN, *registry);
  EXPECT_NE(message.find("failed to register its solvers: this plugin needs a GPU with 1 TB"),
            std::string::npos)
      << message;
}

TEST(PluginLoader, RefusesADirectoryGivenAsAFile) {
  auto registry = fresh_registry();
  const std::string message = refusal(scratch_dir().string(), *registry);
  EXPECT_NE(message.find("is a directory"), std::string::npos) << message;
}

TEST(PluginLoader, GlobalRegistryIsTheDefault) {
  load_plugin(example_plugin);
  EXPECT_TRUE(SolverRegistry::global().contains("truncated_unrolled"));
  EXPECT_EQ(plugin_providing("truncated_unrolled"), canonical(example_plugin));
}

}  // namespace
}  // namespace sinkgrad::testing
