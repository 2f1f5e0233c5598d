// `sinkgrad grad` on good inputs: every solver (and system) in both precisions writes the
// documented datasets and attributes, with exactly the numbers the library computes when
// called directly on the same data.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <set>

#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

struct SolverCase {
  std::string solver;
  std::map<std::string, std::string> options;
};

// Every registered solver with its defaults, plus the non-default systems and CG settings.
std::vector<SolverCase> solver_cases() {
  std::vector<SolverCase> cases;
  for (const std::string& name : SolverRegistry::global().names()) cases.push_back({name, {}});
  cases.push_back({"cg_plain", {{"system", "block"}}});
  cases.push_back({"direct", {{"system", "plain"}}});
  cases.push_back({"cg_corrected", {{"max_iterations", "2"}, {"tolerance", "1e-6"}}});
  return cases;
}

std::string options_text(const OptionValues& values) {
  std::string text;
  for (const auto& [key, value] : values.all())
    text += (text.empty() ? "" : " ") + key + "=" + value;
  return text;
}

template <class Real>
void expect_identical(const std::vector<Real>& cli, const Real* library, std::size_t size,
                      const char* what) {
  ASSERT_EQ(cli.size(), size) << what;
  std::size_t mismatches = 0, first = size;
  for (std::size_t k = 0; k < size; ++k) {
    const bool same = (std::isnan(cli[k]) && std::isnan(library[k])) || cli[k] == library[k];
    if (!same && mismatches++ == 0) first = k;
  }
  EXPECT_EQ(mismatches, 0u) << what << ": first difference at element " << first << ": cli "
                            << cli[first] << ", library " << library[first];
}

// Runs the CLI and the library on the same input and compares everything in the output file.
template <class Real, class InputReal>
void check_grad(const SolverCase& c, const HostBatch<InputReal>& logits,
                const HostBatch<InputReal>& grad_output, int T, bool give_dtype) {
  SCOPED_TRACE("solver " + c.solver + ", " + std::string(to_string(precision_of<Real>())) +
               ", T = " + std::to_string(T) + ", input " +
               std::string(to_string(precision_of<InputReal>())));
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), logits, grad_output);
  std::vector<std::string> args{"grad",     "--input",          dir.file("in.h5"),
                                "--output", dir.file("out.h5"), "--solver",
                                c.solver,   "--iterations",     std::to_string(T)};
  if (give_dtype) {
    args.push_back("--dtype");
    args.push_back(std::string(to_string(precision_of<Real>())));
  }
  for (const auto& [key, value] : c.options) {
    args.push_back("--option");
    args.push_back(key + "=" + value);
  }
  const CliResult run = run_cli(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("status: ok"), std::string::npos) << run.out;

  // The library, called directly on the same numbers.
  const index_t B = logits.batch();
  const int n = logits.n();
  const HostBatch<Real> M = convert<Real>(logits);
  const HostBatch<Real> G = convert<Real>(grad_output);
  HostBatch<Real> R(B, n), dM(B, n);
  std::vector<Real> violation(static_cast<size_t>(B));
  sinkhorn_forward<Real>(M.view(), T, R.view(), violation.data());
  const auto solver = SolverRegistry::global().create(c.solver, c.options);
  std::vector<SolveStatus> status(static_cast<size_t>(B));
  std::vector<std::int32_t> iterations(static_cast<size_t>(B));
  std::vector<Real> rows(static_cast<size_t>(B)), columns(rows.size()), residuals(rows.size());
  std::vector<std::int32_t> zeros(rows.size());
  BackwardResult<Real> result{dM.view(), status.data(), iterations.data()};
  result.diagnostics = {rows.data(), columns.data(), residuals.data(), zeros.data()};
  solver->solve(BackwardProblem<Real>{M.view(), R.view(), G.view(), T}, result);

  const h5::File out = h5::File::open(dir.file("out.h5"));
  const std::vector<std::string> expected_datasets{"R",           "column_violation", "diagnostics",
                                                   "grad_logits", "iterations",       "status"};
  EXPECT_EQ(out.children(), expected_datasets);
  const h5::Group diagnostics = out.open_group("diagnostics");
  expect_identical(h5::read_vector<Real>(diagnostics, "row_violation"), rows.data(), rows.size(),
                   "diagnostics/row_violation");
  expect_identical(h5::read_vector<Real>(diagnostics, "column_violation"), columns.data(),
                   columns.size(), "diagnostics/column_violation");
  expect_identical(h5::read_vector<Real>(diagnostics, "relative_residual"), residuals.data(),
                   residuals.size(), "diagnostics/relative_residual");
  expect_identical(h5::read_vector<std::int32_t>(diagnostics, "zero_entries"), zeros.data(),
                   zeros.size(), "diagnostics/zero_entries");
  const auto real_type = h5::element_type(precision_of<Real>());
  const auto B_size = static_cast<std::size_t>(B), n_size = static_cast<std::size_t>(n);
  for (const char* name : {"R", "grad_logits"}) {
    const auto info = h5::Dataset::open(out, name).info();
    EXPECT_EQ(info.shape, (std::vector<std::size_t>{B_size, n_size, n_size})) << name;
    EXPECT_EQ(info.type, real_type) << name;
  }
  for (const char* name : {"status", "iterations", "column_violation"}) {
    const auto info = h5::Dataset::open(out, name).info();
    EXPECT_EQ(info.shape, std::vector<std::size_t>{B_size}) << name;
    EXPECT_EQ(info.type,
              std::string(name) == "column_violation" ? real_type : h5::ElementType::int32)
        << name;
  }
  expect_identical(h5::Dataset::open(out, "R").read<Real>(), R.data(), R.view().size(), "R");
  expect_identical(h5::Dataset::open(out, "grad_logits").read<Real>(), dM.data(), dM.view().size(),
                   "grad_logits");
  expect_identical(h5::read_vector<Real>(out, "column_violation"), violation.data(),
                   violation.size(), "column_violation");
  const auto cli_status = h5::read_vector<std::int32_t>(out, "status");
  const auto cli_iterations = h5::read_vector<std::int32_t>(out, "iterations");
  for (std::size_t b = 0; b < B_size; ++b) {
    EXPECT_EQ(cli_status[b], static_cast<std::int32_t>(status[b])) << "matrix " << b;
    EXPECT_EQ(cli_iterations[b], iterations[b]) << "matrix " << b;
  }

  EXPECT_EQ(h5::read_string_attribute(out, "solver"), c.solver);
  EXPECT_EQ(h5::read_string_attribute(out, "options"), options_text(solver->options()));
  EXPECT_EQ(h5::read_int_attribute(out, "T"), T);
  EXPECT_EQ(h5::read_string_attribute(out, "dtype"), to_string(precision_of<Real>()));
  EXPECT_EQ(h5::read_string_attribute(out, "device"), "cpu");
  EXPECT_EQ(h5::read_string_attribute(out, "sinkgrad_version"), SINKGRAD_EXPECTED_VERSION);
  EXPECT_EQ(h5::read_string_attribute(out, "input"), dir.file("in.h5"));
}

template <class Real>
void check_every_solver(std::uint64_t salt) {
  auto rng = make_rng(salt);
  const index_t B = 3 + static_cast<index_t>(rng() % 40);
  const int n = 1 + static_cast<int>(rng() % 9);
  HostBatch<Real> logits = uniform_batch<Real>(rng, B, n, 0.0, 4.0);
  const HostBatch<Real> grad_output = normal_batch<Real>(rng, B, n);
  logits(1, 0, 0) = std::nan("");  // one bad matrix: invalid_input, its neighbours unharmed
  for (const SolverCase& c : solver_cases()) {
    const int T = 1 + static_cast<int>(rng() % 30);
    SCOPED_TRACE("B = " + std::to_string(B) + ", n = " + std::to_string(n));
    check_grad<Real, Real>(c, logits, grad_output, T, true);
  }
}

TEST(GradCommand, EverySolverInFloat64MatchesTheLibrary) {
  check_every_solver<double>(1);
}

TEST(GradCommand, EverySolverInFloat32MatchesTheLibrary) {
  check_every_solver<float>(2);
}

TEST(GradCommand, DtypeDefaultsToTheInputsAndConvertsOnRequest) {
  auto rng = make_rng(3);
  const HostBatch<float> logits32 = uniform_batch<float>(rng, 17, 6, 0.0, 4.0);
  const HostBatch<float> grad32 = normal_batch<float>(rng, 17, 6);
  const HostBatch<double> logits64 = uniform_batch<double>(rng, 17, 6, 0.0, 4.0);
  const HostBatch<double> grad64 = normal_batch<double>(rng, 17, 6);
  const SolverCase c{"cg_corrected", {}};
  check_grad<float, float>(c, logits32, grad32, 7, false);    // default: the input's float32
  check_grad<double, double>(c, logits64, grad64, 7, false);  // default: the input's float64
  check_grad<double, float>(c, logits32, grad32, 7, true);    // float32 input, float64 solve
  check_grad<float, double>(c, logits64, grad64, 7, true);    // float64 input, float32 solve
}

TEST(GradCommand, MixedInputPrecisionsFollowTheLogits) {
  auto rng = make_rng(4);
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), uniform_batch<float>(rng, 5, 3, 0.0, 4.0),
                   normal_batch<double>(rng, 5, 3));
  const CliResult run =
      run_cli({"grad", "-i", dir.file("in.h5"), "-o", dir.file("out.h5"), "-s", "unrolled"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const h5::File out = h5::File::open(dir.file("out.h5"));
  EXPECT_EQ(h5::read_string_attribute(out, "dtype"), "float32");
  EXPECT_EQ(h5::read_int_attribute(out, "T"), 20);  // the documented default
}

TEST(GradCommand, ReplacesAnExistingOutputAndLeavesNoTemporaryFile) {
  auto rng = make_rng(5);
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), uniform_batch<double>(rng, 4, 4, 0.0, 4.0),
                   normal_batch<double>(rng, 4, 4));
  write_text(dir.file("out.h5"), "an old file");
  const CliResult run =
      run_cli({"grad", "-i", dir.file("in.h5"), "-o", dir.file("out.h5"), "-s", "direct"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(h5::read_string_attribute(h5::File::open(dir.file("out.h5")), "solver"), "direct");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"in.h5", "out.h5"}));
}

TEST(GradCommand, EmptyBatchGivesEmptyDatasets) {
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), HostBatch<double>(0, 3), HostBatch<double>(0, 3));
  const CliResult run =
      run_cli({"grad", "-i", dir.file("in.h5"), "-o", dir.file("out.h5"), "-s", "cg_plain"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const h5::File out = h5::File::open(dir.file("out.h5"));
  EXPECT_EQ(h5::Dataset::open(out, "grad_logits").info().shape,
            (std::vector<std::size_t>{0, 3, 3}));
  EXPECT_TRUE(h5::read_vector<std::int32_t>(out, "status").empty());
}

// --device cuda: the forward runs on the CPU, the solve on the GPU with host batches staged by
// the library. Same statuses (up to CG stopping on either side of its tolerance) and gradients
// within the precision's accuracy of the CPU's.
template <class Real>
void check_cuda_against_cpu(const std::string& solver, std::mt19937_64& rng, double tolerance) {
  const int n = 2 + static_cast<int>(rng() % 7);
  const index_t B = 64;
  SCOPED_TRACE(solver + ", " + std::string(to_string(precision_of<Real>())) +
               ", n = " + std::to_string(n));
  const ScratchDir dir;
  write_grad_input(dir.file("in.h5"), uniform_batch<Real>(rng, B, n, 0.0, 4.0),
                   normal_batch<Real>(rng, B, n));
  for (const char* device : {"cpu", "cuda"}) {
    const CliResult run =
        run_cli({"grad", "-i", dir.file("in.h5"), "-o", dir.file(std::string(device) + ".h5"), "-s",
                 solver, "-T", "20", "--device", device});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  const h5::File cpu = h5::File::open(dir.file("cpu.h5"));
  const h5::File gpu = h5::File::open(dir.file("cuda.h5"));
  EXPECT_EQ(h5::read_string_attribute(gpu, "device"), "cuda");
  const auto cpu_status = h5::read_vector<std::int32_t>(cpu, "status");
  const auto gpu_status = h5::read_vector<std::int32_t>(gpu, "status");
  const auto cpu_grad = h5::Dataset::open(cpu, "grad_logits").read<Real>();
  const auto gpu_grad = h5::Dataset::open(gpu, "grad_logits").read<Real>();
  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  for (std::size_t b = 0; b < static_cast<std::size_t>(B); ++b) {
    const bool finite_both = cpu_status[b] <= 1 && gpu_status[b] <= 1;  // ok or not_converged
    EXPECT_TRUE(finite_both || cpu_status[b] == gpu_status[b])
        << "matrix " << b << ": cpu status " << cpu_status[b] << ", cuda " << gpu_status[b];
    if (cpu_status[b] != 0 || gpu_status[b] != 0) continue;
    double diff = 0, norm = 0;
    for (std::size_t k = b * size; k < (b + 1) * size; ++k) {
      diff +=
          (double(gpu_grad[k]) - double(cpu_grad[k])) * (double(gpu_grad[k]) - double(cpu_grad[k]));
      norm += double(cpu_grad[k]) * double(cpu_grad[k]);
    }
    EXPECT_LE(std::sqrt(diff), tolerance * std::sqrt(norm) + 1e-30) << "matrix " << b;
  }
}

TEST(GradCommand, CudaDeviceMatchesTheCpu) {
  const SolverRegistry& registry = SolverRegistry::global();
  if (!registry.info("cg_corrected").supports(Device::cuda))
    GTEST_SKIP() << "built without CUDA: --device cuda is refused (see GradErrors)";
  const ScratchDir probe_dir;
  write_grad_input(probe_dir.file("in.h5"), HostBatch<double>(1, 2), HostBatch<double>(1, 2));
  const CliResult probe =
      run_cli({"grad", "-i", probe_dir.file("in.h5"), "-o", probe_dir.file("out.h5"), "-s",
               "cg_corrected", "--device", "cuda"});
  if (probe.exit_code != 0 && probe.err.find("no CUDA device") != std::string::npos)
    GTEST_SKIP() << "no CUDA device on this machine";
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  auto rng = make_rng(6);
  for (const std::string& name : registry.names()) {
    if (!registry.info(name).supports(Device::cuda)) continue;
    check_cuda_against_cpu<double>(name, rng, 1e-9);
    check_cuda_against_cpu<float>(name, rng, 1e-3);
  }
}

TEST(GradCommand, InterruptLeavesNoTemporaryFile) {
  auto rng = make_rng(7);
  const ScratchDir dir;
  // A forward of 10^6 iterations: still running when interrupted.
  write_grad_input(dir.file("in.h5"), uniform_batch<float>(rng, 1024, 16, 0.0, 4.0),
                   normal_batch<float>(rng, 1024, 16));
  const std::string input = dir.file("in.h5"), output = dir.file("out.h5");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDOUT_FILENO);
      ::dup2(null_fd, STDERR_FILENO);
    }
    ::execl(SINKGRAD_CLI_PATH, "sinkgrad", "grad", "-i", input.c_str(), "-o", output.c_str(), "-s",
            "unrolled", "-T", "1000000", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto temporary_exists = [&] {
    for (const std::string& name : dir.entries())
      if (name.rfind(".out.h5.tmp", 0) == 0) return true;
    return false;
  };
  for (int wait = 0; wait < 600 && !temporary_exists(); ++wait) ::usleep(50000);
  EXPECT_TRUE(temporary_exists()) << "the temporary output never appeared";
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"in.h5"});
}

}  // namespace
}  // namespace sinkgrad::testing
