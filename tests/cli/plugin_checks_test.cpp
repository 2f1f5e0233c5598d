// A plugin file is checked before dlopen maps it, and the names it registers before they are
// used (docs/cli.md, "What sinkgrad refuses"): a truncated library that keeps its ELF header
// killed the process with SIGBUS inside dlopen; a solver name with a newline and an escape
// sequence cleared the terminal in `sinkgrad solvers`; empty, duplicated or `a=b` option names
// were accepted; a raw throw out of an entry point did not name the plugin. Each case through
// the real binary, under a time limit (fuzz_support.hpp). The plugins are the test's hostile
// plugin (a valid library) and tests/plugins/hostile/bad_names_plugin.cpp.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/cli/cli_test_support.hpp"
#include "tests/cli/fuzz_support.hpp"

namespace sinkgrad::testing {
namespace {

namespace fs = std::filesystem;

// `sinkgrad solvers --plugin PATH` must refuse: exit 1, one line naming the file and `part`,
// no signal, no hang, nothing on stdout.
void expect_plugin_refused(const std::string& path, const std::string& part) {
  SCOPED_TRACE(path);
  const ScratchDir capture;
  const Outcome outcome = run_limited({"solvers", "--plugin", path}, capture);
  EXPECT_FALSE(outcome.signalled) << "crash or hang: " << outcome.err;
  EXPECT_EQ(outcome.exit_code, 1) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "plugin '" + fs::canonical(path).string() + "'"))
      << outcome.err;
  EXPECT_TRUE(contains(outcome.err, part)) << outcome.err;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  EXPECT_EQ(read_text(capture.file("stdout")), "");
}

TEST(PluginChecks, TruncatedLibraryIsRefusedBeforeDlopen) {
  const ScratchDir dir;
  const std::string library = read_text(SINKGRAD_TEST_HOSTILE_PLUGIN);
  ASSERT_GT(library.size(), 4096u);
  for (const std::size_t size : {std::size_t(63), std::size_t(64), std::size_t(1000),
                                 std::size_t(4096), library.size() / 2, library.size() - 1}) {
    const std::string path = dir.file("cut" + std::to_string(size) + ".so");
    write_text(path, library.substr(0, size));
    expect_plugin_refused(path, size < 64 ? "no ELF header" : "cut short or damaged");
  }
}

TEST(PluginChecks, LibraryOfAnotherMachineOrKindIsRefused) {
  const ScratchDir dir;
  std::string library = read_text(SINKGRAD_TEST_HOSTILE_PLUGIN);
  std::string other_machine = library;
  other_machine[18] = static_cast<char>(other_machine[18] ^ 0x55);  // e_machine
  write_text(dir.file("machine.so"), other_machine);
  expect_plugin_refused(dir.file("machine.so"), "for another processor");
  std::string other_class = library;
  other_class[4] = 1;  // EI_CLASS: 32-bit
  write_text(dir.file("class.so"), other_class);
  expect_plugin_refused(dir.file("class.so"), "another word size or byte order");
  ASSERT_EQ(::mkfifo(dir.file("fifo.so").c_str(), 0600), 0);
  expect_plugin_refused(dir.file("fifo.so"), "is not a regular file");
}

TEST(PluginChecks, WorldWritablePluginGivesAWarning) {
  const ScratchDir dir;
  fs::copy_file(SINKGRAD_TEST_HOSTILE_PLUGIN, dir.file("open.so"));
  fs::permissions(dir.file("open.so"), fs::perms::others_write, fs::perm_options::add);
  const CliResult result = run_cli({"solvers", "--names", "--plugin", dir.file("open.so")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.err, "warning: plugin '")) << result.err;
  EXPECT_TRUE(contains(result.err, "can be written by every user")) << result.err;
  EXPECT_TRUE(contains(result.out, "hostile_test")) << result.out;
}

class BadNames : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(BadNames, PluginIsRefusedNamingTheFileAndTheName) {
  const auto [mode, part] = GetParam();
  ASSERT_EQ(::setenv("SINKGRAD_TEST_BAD_NAMES", mode, 1), 0);
  expect_plugin_refused(SINKGRAD_TEST_BAD_NAMES_PLUGIN, part);
  ::unsetenv("SINKGRAD_TEST_BAD_NAMES");
}

INSTANTIATE_TEST_SUITE_P(
    PluginChecks, BadNames,
    ::testing::Values(
        std::pair{"escape", "solver name 'bad\\x0A\\x1B[2J\\x1B[Hname' is not allowed"},
        std::pair{"all", "solver name 'all' is not allowed: 'all' is reserved"},
        std::pair{"escape_description",
                  "the description of solver 'bad_names_test' holds a control character (\\x1B)"},
        std::pair{"empty_option", "option '' of solver 'bad_names_test' is not allowed"},
        std::pair{"equals_option", "option 'a=b' of solver 'bad_names_test' is not allowed"},
        std::pair{"duplicate_option", "option 'mode' of solver 'bad_names_test' is declared twice"},
        std::pair{"throw_raw",
                  "its entry point sinkgrad_plugin_register threw an exception across the C "
                  "boundary: raw throw across C entry"}));

TEST(PluginChecks, ValidNamesAreStillLoaded) {
  ::unsetenv("SINKGRAD_TEST_BAD_NAMES");
  const CliResult result =
      run_cli({"solvers", "--names", "--plugin", SINKGRAD_TEST_BAD_NAMES_PLUGIN});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "bad_names_test\n")) << result.out;
}

}  // namespace
}  // namespace sinkgrad::testing
