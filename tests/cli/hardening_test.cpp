// What sinkgrad refuses (docs/cli.md, "What sinkgrad refuses, and why"), each case through the
// real binary: outputs that are devices, FIFOs or an input; inputs larger than memory; plugin
// solvers that throw or break the output contract; out-of-range numbers; direct plain's
// near-cut eigenvalues; and messages that must name the real problem on one line.

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <initializer_list>

#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

namespace fs = std::filesystem;

// One line: the message and its newline, nothing else.
void expect_one_line(const CliResult& run) {
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

// An HDF5 file whose float64 datasets `names` have shape `dims`, never written (HDF5 allocates
// their storage only when written, so any declared size costs nothing).
void declare_datasets(const std::string& path, const std::array<hsize_t, 3>& dims,
                      std::initializer_list<const char*> names) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(3, dims.data(), nullptr);
  for (const char* name : names)
    H5Dclose(H5Dcreate2(f, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(space);
  H5Fclose(f);
}

class Hardening : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rng = make_rng(18);
    write_grad_input(dir_.file("good.h5"), uniform_batch<double>(rng, 4, 3, 0.0, 4.0),
                     normal_batch<double>(rng, 4, 3));
    good_ = read_text(dir_.file("good.h5"));
  }
  std::string file(const std::string& name) const { return dir_.file(name); }
  // Names in the scratch directory other than `expected` (temporary files left behind).
  std::vector<std::string> extra_entries(std::vector<std::string> expected) const {
    std::vector<std::string> found = dir_.entries(), extra;
    for (const std::string& name : found)
      if (std::find(expected.begin(), expected.end(), name) == expected.end())
        extra.push_back(name);
    return extra;
  }
  CliResult grad(const std::string& output, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"grad", "-i", file("good.h5"), "-o", output, "-s", "unrolled"};
    args.insert(args.end(), more.begin(), more.end());
    return run_cli(args);
  }
  void expect_input_unchanged() { EXPECT_EQ(read_text(file("good.h5")), good_); }

  ScratchDir dir_;
  std::string good_;
};

// 1. A FIFO (or a device, through a link to /dev/null) is never replaced by a regular file.
TEST_F(Hardening, OutputThatIsAFifoOrDeviceIsRefused) {
  ASSERT_EQ(::mkfifo(file("fifo").c_str(), 0600), 0);
  CliResult run = grad(file("fifo"));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "a FIFO")) << run.err;
  expect_one_line(run);
  struct stat info {};
  ASSERT_EQ(::lstat(file("fifo").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode)) << "the FIFO was replaced";

  fs::create_symlink("/dev/null", file("null_link"));
  run = grad(file("null_link"));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "character device")) << run.err;
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
  EXPECT_TRUE(fs::is_symlink(file("null_link")));
  EXPECT_EQ(extra_entries({"good.h5", "fifo", "null_link"}), std::vector<std::string>{});
}

// 2. Output = input (by name, hard link or symbolic link) is refused; other links write through.
TEST_F(Hardening, OutputThatIsTheInputIsRefused) {
  fs::create_hard_link(file("good.h5"), file("hard.h5"));
  fs::create_symlink(file("good.h5"), file("soft.h5"));
  for (const std::string& output : {file("good.h5"), file("hard.h5"), file("soft.h5")}) {
    SCOPED_TRACE(output);
    const CliResult run = grad(output);
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_TRUE(contains(run.err, "same file as the input")) << run.err;
    expect_one_line(run);
    expect_input_unchanged();
  }
  EXPECT_TRUE(fs::is_symlink(file("soft.h5")));
  EXPECT_EQ(extra_entries({"good.h5", "hard.h5", "soft.h5"}), std::vector<std::string>{});
}

TEST_F(Hardening, SymbolicLinkOutputIsWrittenThrough) {
  write_text(file("target.h5"), "old");
  fs::create_symlink("target.h5", file("link.h5"));
  const CliResult run = grad(file("link.h5"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::is_symlink(file("link.h5"))) << "the link itself must stay a link";
  const h5::File written = h5::File::open(file("target.h5"));
  EXPECT_TRUE(written.has_dataset("grad_logits"));

  fs::create_symlink("missing.h5", file("dangling.h5"));
  const CliResult dangling = grad(file("dangling.h5"));
  EXPECT_EQ(dangling.exit_code, 1);
  EXPECT_TRUE(contains(dangling.err, "symbolic link to a missing file")) << dangling.err;
}

// An input named as a FIFO would block forever in open(): refused at once.
TEST_F(Hardening, InputThatIsAFifoIsRefused) {
  ASSERT_EQ(::mkfifo(file("in_fifo").c_str(), 0600), 0);
  const CliResult run =
      run_cli({"grad", "-i", file("in_fifo"), "-o", file("out.h5"), "-s", "unrolled"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "not a regular file")) << run.err;
}

// 3. A declared shape larger than memory is refused with both sizes, before allocating.
TEST_F(Hardening, InputLargerThanMemoryIsRefusedWithSizes) {
  const std::string path = file("huge.h5");
  declare_datasets(path, {hsize_t(1) << 32, 64, 64}, {"logits", "grad_output"});  // 128 TiB
  const std::string before = read_text(path);
  const CliResult run = run_cli({"grad", "-i", path, "-o", file("out.h5"), "-s", "unrolled"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "needs about")) << run.err;
  EXPECT_TRUE(contains(run.err, "TiB of memory, but only")) << run.err;
  EXPECT_TRUE(contains(run.err, "huge.h5")) << run.err;
  expect_one_line(run);
  EXPECT_EQ(read_text(path), before);
  EXPECT_EQ(extra_entries({"good.h5", "huge.h5"}), std::vector<std::string>{});
}

// The unrolled tape counts: on the CPU the replay keeps every step's potentials, 2 n T values
// per thread, which at n = 64 and T = 10^6 is 1 GB a thread for 128 KiB of input.
TEST_F(Hardening, TheUnrolledTapeIsCountedBeforeTheSolve) {
  auto rng = make_rng(19);
  write_grad_input(file("n64.h5"), normal_batch<double>(rng, 4, 64),
                   normal_batch<double>(rng, 4, 64));
  ASSERT_EQ(::setenv("SINKGRAD_MEMORY_LIMIT", "100000000", 1), 0);
  const CliResult refused = run_cli(
      {"grad", "-i", file("n64.h5"), "-o", file("out.h5"), "-s", "unrolled", "-T", "1000000"});
  const CliResult fits = run_cli(
      {"grad", "-i", file("n64.h5"), "-o", file("small.h5"), "-s", "unrolled", "-T", "1000"});
  ::unsetenv("SINKGRAD_MEMORY_LIMIT");
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(contains(refused.err, "needs about")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "GiB of memory, but only")) << refused.err;
  expect_one_line(refused);
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(extra_entries({"good.h5", "n64.h5", "small.h5"}), std::vector<std::string>{});
}

// A study's file() source with no matrices in it is a definition error: nothing is created.
TEST_F(Hardening, AStudyFileSourceWithoutMatricesIsRefused) {
  const std::string path = file("empty_batch.h5");
  declare_datasets(path, {0, 5, 5}, {"logits"});
  write_text(file("empty.ini"),
             "[inputs]\nbatch = 4\nlogits = file(empty_batch.h5, logits)\n"
             "[forward]\nT = 2\n[solvers]\nuse = all\n[run]\ndevices = cpu\n");
  const CliResult run = run_cli({"run", file("empty.ini"), "-o", file("o.h5")});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "holds no matrices")) << run.err;
  expect_one_line(run);
  EXPECT_EQ(extra_entries({"good.h5", "empty_batch.h5", "empty.ini"}), std::vector<std::string>{});
}

TEST_F(Hardening, StudyLargerThanMemoryLeavesNoLog) {
  write_text(file("big.ini"),
             "[inputs]\nn = 64\nbatch = 100000000000\nlogits = uniform(0, 4)\n[forward]\nT = 1\n"
             "[solvers]\nuse = unrolled\n[run]\ndevices = cpu\n");
  const CliResult run = run_cli({"run", file("big.ini"), "-o", file("big.h5")});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "needs about")) << run.err;
  EXPECT_TRUE(contains(run.err, "is available")) << run.err;
  expect_one_line(run);
  EXPECT_EQ(extra_entries({"good.h5", "big.ini"}), std::vector<std::string>{});
}

TEST_F(Hardening, SweepWithTooManyRunsIsRefusedBeforeExpanding) {
  std::string Ts;
  for (int T = 1; T <= 120000; ++T) {
    if (T > 1) Ts += ',';
    Ts += std::to_string(T);
  }
  std::string text = "[inputs]\nn = 4\nbatch = 1\nlogits = uniform(0, 4)\n[forward]\nT = ";
  text += Ts;
  text += "\n[solvers]\nuse = all\n[run]\ndevices = cpu\n";
  write_text(file("wide.ini"), text);
  const CliResult run =
      run_cli({"run", file("wide.ini"), "-o", file("wide.h5"), "--max-runs", "1"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "more than 100000 runs")) << run.err;
  EXPECT_EQ(extra_entries({"good.h5", "wide.ini"}), std::vector<std::string>{});
}

// 5. Numeric options are bounded.
TEST_F(Hardening, NumericOptionsAreBounded) {
  CliResult run = grad(file("out.h5"), {"--threads", "100000"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "--threads must be between 1 and")) << run.err;
  run = grad(file("out.h5"), {"--iterations", "2000000000"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(extra_entries({"good.h5"}), std::vector<std::string>{});

  run = run_cli({"demo", "--seed", "-1", "--batch", "2", "--sizes", "3", "--iterations", "2"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "--seed must be an integer from 0")) << run.err;

  run = run_cli({"demo", "--batch", "1000000000000", "--sizes", "64"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "of memory, but only")) << run.err;
  EXPECT_EQ(run.out, "") << "the header must not be printed before the refusal";
}

// 7. direct plain: an eigenvalue of S = I - R^T R within rounding of the pseudo-inverse's cut,
// in a direction that changes the gradient, is reported as ill_conditioned, never ok. R is
// (1 - d) P + d U: P two 2x2 blocks of 1/2, U all 1/4; S has the eigenvalue 1 - (1 - d)^2 ~ 2d
// along (1, 1, -1, -1), here a few n eps (the cut is n eps max|lambda| = 4 eps).
TEST_F(Hardening, DirectPlainNearTheCutIsIllConditioned) {
  const double eps = 2.220446049250313e-16;
  HostBatch<double> logits(2, 4);
  auto rng = make_rng(7);
  const HostBatch<double> G = normal_batch<double>(rng, 2, 4);
  for (int b = 0; b < 2; ++b) {
    const double d = b == 0 ? 10 * eps : 0.3;  // matrix 1: well conditioned
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        logits.data()[b * 16 + i * 4 + j] = std::log((i / 2 == j / 2 ? (1 - d) / 2 : 0) + d / 4);
  }
  write_grad_input(file("near_cut.h5"), logits, G);
  const CliResult run = run_cli({"grad", "-i", file("near_cut.h5"), "-o", file("out.h5"), "-s",
                                 "direct", "--option", "system=plain", "-T", "50"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const h5::File out = h5::File::open(file("out.h5"));
  std::vector<std::int32_t> status(2);
  h5::Dataset::open(out, "status").read_into(status.data());
  EXPECT_EQ(status[0], 4) << "near the cut: ill_conditioned";
  EXPECT_EQ(status[1], 0) << "well conditioned: ok";
  EXPECT_TRUE(contains(run.out, "ill_conditioned 1")) << run.out;
}

// 9. Messages name the real problem.
TEST_F(Hardening, DefinitionMessagesNameTheRealProblem) {
  const std::string base = "[forward]\nT = 1\n[run]\ndevices = cpu\n[inputs]\nn = 3\nbatch = 2\n";
  const auto check = [&](const std::string& text, const std::string& expected) {
    SCOPED_TRACE(expected);
    write_text(file("d.ini"), text);
    const CliResult run = run_cli({"run", file("d.ini"), "-o", file("d.h5")});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_TRUE(contains(run.err, expected)) << run.err;
    expect_one_line(run);
    EXPECT_FALSE(fs::exists(file("d.h5")));
  };
  check(base + "logits = uniform(0, 4)\n[solvers]\nuse = all, unrolled\n", "'all' stands alone");
  check(base + "logits = uniform(0, 4\n[solvers]\nuse = unrolled\n", "unbalanced parentheses");
  check(base +
            "logits = uniform(0, 4)\n[solvers]\nuse = unr\xff"
            "olled\n",
        "0xFF is not UTF-8");
  check(base + std::string("logits = uniform(0, 4)\n[solvers]\nuse = unr\0olled\n", 49), "(NUL)");
  // A byte order mark is not an invalid line: this definition is fine up to its solver.
  check("\xEF\xBB\xBF" + base + "logits = uniform(0, 4)\n[solvers]\nuse = nosuch\n",
        "unknown solver 'nosuch'");

  fs::create_directory(file("dir"));
  const CliResult run = run_cli({"run", file("dir"), "-o", file("d.h5")});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "is a directory")) << run.err;
}

TEST(HardeningHelp, EveryDemoOptionHasHelp) {
  const CliResult run = run_cli({"demo", "--help"});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_TRUE(contains(run.out, "logits ~ uniform(0, s)")) << run.out;
}

}  // namespace
}  // namespace sinkgrad::testing
