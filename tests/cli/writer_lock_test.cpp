// One writer per study log, whatever HDF5's own locking is set to: with
// HDF5_USE_FILE_LOCKING=FALSE a second `run --resume` on a log being written is refused naming
// the first writer, and a lock file left by a process that is gone blocks nobody. Two real
// processes.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/cli/spawn_support.hpp"

namespace sinkgrad {
namespace {

using testing::ScratchDir;
using testing::SpawnOptions;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Long enough (several seconds) for a second process to start while it runs.
const char* const long_sweep =
    "[inputs]\nn = 8, 16\nbatch = 64\nlogits = uniform(0, 4), uniform(0, 10)\n"
    "[forward]\nT = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\n[solvers]\nuse = all\n"
    "[solver.cg_corrected]\nmax_iterations = 8, 16, 32\ntolerance = 0\n[run]\ndevices = cpu\n";

TEST(WriterLock, ASecondWriterIsRefusedNamingTheFirstAndAStaleLockBlocksNobody) {
  const ScratchDir dir, capture;
  const std::string definition = dir.file("long.ini"), log = dir.file("long.h5");
  testing::write_text(definition, long_sweep);
  SpawnOptions no_hdf5_locking;
  no_hdf5_locking.environment = {{"HDF5_USE_FILE_LOCKING", "FALSE"}};
  const std::vector<std::string> args = {"run", definition, "-o", log, "--resume", "--quiet"};
  const pid_t first =
      testing::spawn_cli(args, capture.file("1.out"), capture.file("1.err"), no_hdf5_locking);
  // The lock file names its holder once the lock is taken.
  const std::string holder = "pid " + std::to_string(first) + " on host ";
  for (int k = 0; k < 400 && !contains(testing::read_text(log + ".lock"), holder); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(contains(testing::read_text(log + ".lock"), holder));

  const testing::Finished second = testing::run_cli_with(capture, args, no_hdf5_locking);
  // A reader of the log meanwhile is told the same.
  const testing::Finished summary =
      testing::run_cli_with(capture, {"summary", log}, no_hdf5_locking);
  int status = 0;
  testing::Finished first_done;
  const bool first_still_running = ::waitpid(first, &status, WNOHANG) == 0;
  if (first_still_running) {
    first_done = testing::wait_cli(first, capture.file("1.out"), capture.file("1.err"));
  } else {
    first_done.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    first_done.out = testing::read_text(capture.file("1.out"));
    first_done.err = testing::read_text(capture.file("1.err"));
  }
  if (!first_still_running && second.exit_code == 0)
    GTEST_SKIP() << "the first sweep finished before the second started";
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_TRUE(contains(second.err, "is being written by " + holder)) << second.err;
  if (first_still_running) {  // the summary ran while the first wrote
    EXPECT_EQ(summary.exit_code, 1) << summary.err;
    EXPECT_TRUE(contains(summary.err, "is being written by " + holder)) << summary.err;
  }
  ASSERT_EQ(first_done.exit_code, 0) << first_done.err;
  EXPECT_TRUE(contains(first_done.out, "280 runs (0 already in the log, 280 run now"))
      << first_done.out;

  // The lock file stays behind; its process is gone, so it blocks nothing.
  ASSERT_TRUE(std::filesystem::exists(log + ".lock"));
  const testing::Finished third = testing::run_cli_with(capture, args, no_hdf5_locking);
  EXPECT_EQ(third.exit_code, 0) << third.err;
  EXPECT_TRUE(contains(third.out, "280 already in the log")) << third.out;
}

}  // namespace
}  // namespace sinkgrad
