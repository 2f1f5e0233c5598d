// A full disk or a file-size limit in the middle of a write: `run` stops with one line and exit
// code 1 (never a crash), its log stays as it was after the last complete run and resumes to
// the same results as a clean run; `grad` leaves nothing under the output name. The limit is
// RLIMIT_FSIZE everywhere, and a small tmpfs where this process may mount one (as root).
// Through the real binary.

#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/cli/spawn_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad {
namespace {

using testing::Finished;
using testing::run_cli_with;
using testing::ScratchDir;
using testing::SpawnOptions;

// 24 quick runs on the cpu.
const char* const sweep =
    "[inputs]\nn = 3\nbatch = 16\nlogits = uniform(0, 4)\n[forward]\n"
    "T = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12\n[solvers]\nuse = unrolled, cg_corrected\n"
    "[measure]\ntiming_repeats = 1\n[run]\ndevices = cpu\n";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Complete runs: key -> the numbers that do not depend on timing. Opening the log also checks
// that it is a readable HDF5 file.
std::map<std::string, std::vector<double>> complete_runs(const std::string& path) {
  std::map<std::string, std::vector<double>> runs;
  const h5::File log = h5::File::open(path);
  const h5::Group group = log.open_group("runs");
  for (const std::string& id : group.children()) {
    const h5::Group run = group.open_group(id);
    if (!h5::has_attribute(run, "complete") || h5::read_int_attribute(run, "complete") != 1)
      continue;
    std::vector<double> values =
        h5::read_vector<double>(run.open_group("error_vs_converged"), "frobenius");
    values.push_back(h5::read_double_attribute(run, "forward_violation_max"));
    runs[h5::read_string_attribute(run, "key")] = values;
  }
  return runs;
}

std::size_t lines_of(const std::string& text) {
  std::size_t lines = 0;
  for (const char c : text) lines += c == '\n';
  return lines;
}

// Runs the sweep into `log` under `limit`, expects the documented failure, resumes without
// the limit (or after `make_room`) and compares with the clean log.
void fail_then_resume(const ScratchDir& dir, const std::string& log, const SpawnOptions& limit,
                      const std::map<std::string, std::vector<double>>& clean,
                      const std::function<void()>& make_room) {
  const ScratchDir capture;
  const std::string definition = dir.file("sweep.ini");
  const Finished failed = run_cli_with(capture, {"run", definition, "-o", log, "--quiet"}, limit);
  ASSERT_EQ(failed.signal, 0) << failed.err;
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_EQ(lines_of(failed.err), 1u) << failed.err;
  EXPECT_TRUE(contains(failed.err, "sinkgrad run: error: cannot record")) << failed.err;
  EXPECT_TRUE(contains(failed.err, "--resume")) << failed.err;
  EXPECT_FALSE(std::filesystem::exists(log + "-journal"));  // rolled back when it closed
  std::size_t kept = 0;
  if (std::filesystem::exists(log)) {
    const auto partial = complete_runs(log);
    kept = partial.size();
    EXPECT_LT(kept, clean.size());
    for (const auto& [key, values] : partial) EXPECT_EQ(values, clean.at(key)) << key;
  }
  make_room();
  const Finished resumed =
      run_cli_with(capture, {"run", definition, "-o", log, "--resume", "--quiet"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.out, std::to_string(kept) + " already in the log")) << resumed.out;
  EXPECT_EQ(complete_runs(log), clean);
}

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_text(dir.file("sweep.ini"), sweep);
    const ScratchDir capture;
    const Finished done =
        run_cli_with(capture, {"run", dir.file("sweep.ini"), "-o", clean_log, "--quiet"});
    ASSERT_EQ(done.exit_code, 0) << done.err;
    clean = complete_runs(clean_log);
    ASSERT_EQ(clean.size(), 24u);
    full_size = static_cast<long long>(std::filesystem::file_size(clean_log));
  }

  ScratchDir dir;
  std::string clean_log = dir.file("clean.h5");
  std::map<std::string, std::vector<double>> clean;
  long long full_size = 0;
};

TEST_F(FullDisk, AFileSizeLimitStopsTheSweepAndTheLogResumes) {
  // From a limit below the log's header to one near its end.
  for (const long long limit : {1000LL, full_size / 5, full_size / 2, full_size * 9 / 10}) {
    SCOPED_TRACE("limit " + std::to_string(limit) + " of " + std::to_string(full_size));
    const std::string log = dir.file("limited_" + std::to_string(limit) + ".h5");
    SpawnOptions options;
    options.file_size_limit = limit;
    fail_then_resume(dir, log, options, clean, [] {});
  }
}

TEST_F(FullDisk, ASmallTmpfsStopsTheSweepAndTheLogResumesOnceThereIsSpace) {
  const std::string mount_point = dir.file("full");
  std::filesystem::create_directory(mount_point);
  // tmpfs counts whole pages; a third of the log leaves room for the header and some runs.
  const long long size = std::max(4096LL, full_size / 3 / 4096 * 4096);
  const std::string options = "size=" + std::to_string(size);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, options.c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "; it needs root); the file-size limit test covers the same path";
  const std::string log = mount_point + "/l.h5";
  fail_then_resume(dir, log, SpawnOptions{}, clean, [&] {
    const std::string bigger = "size=" + std::to_string(full_size * 4);
    ASSERT_EQ(::mount("tmpfs", mount_point.c_str(), "tmpfs", MS_REMOUNT, bigger.c_str()), 0)
        << std::strerror(errno);
  });
  ::umount2(mount_point.c_str(), MNT_DETACH);
}

TEST_F(FullDisk, GradLeavesNothingUnderTheOutputNameAndKeepsAnOldOutput) {
  const ScratchDir work;
  const std::string input = work.file("in.h5");
  auto rng = testing::make_rng(3);
  testing::write_grad_input(input, testing::uniform_batch<double>(rng, 2048, 8, 0, 4),
                            testing::uniform_batch<double>(rng, 2048, 8, -1, 1));
  const std::string output = work.file("out.h5");
  testing::write_text(output, "the previous output");
  const ScratchDir capture;
  SpawnOptions options;
  options.file_size_limit = 400000;  // below the output's size (about 2 MB), above the input
  const Finished failed = run_cli_with(
      capture, {"grad", "-i", input, "-o", output, "-s", "unrolled", "-T", "3"}, options);
  ASSERT_EQ(failed.signal, 0) << failed.err;
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  EXPECT_EQ(lines_of(failed.err), 1u) << failed.err;
  EXPECT_TRUE(contains(failed.err, "cannot write output '" + output + "'")) << failed.err;
  EXPECT_EQ(testing::read_text(output), "the previous output");
  EXPECT_EQ(work.entries().size(), 2u);  // in.h5 and out.h5: no temporary file left
}

}  // namespace
}  // namespace sinkgrad
