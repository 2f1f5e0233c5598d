// Every solver (and system option), precision, n in {1, 2, 3, 4, 7, 8, 16, 32, 64} and
// T in {1, 3, 20, 200}, and the block team's n = 65 and 100 at T = 3 and 20: the CUDA variant
// against the CPU variant on fresh random inputs, with non-converged forwards and bad matrices
// mixed into each batch (CG to the bit). Skipped without a GPU.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "tests/cuda/parity_support.hpp"

namespace sinkgrad::testing {
namespace {

using Case = std::tuple<int, int, int, Precision>;  // solver case, n, T, precision

std::vector<int> sizes() {
  return quick_mode() ? std::vector<int>{1, 3, 8, 64}
                      : std::vector<int>{1, 2, 3, 4, 7, 8, 16, 32, 64};
}
std::vector<int> iteration_counts() {
  return quick_mode() ? std::vector<int>{3, 20} : std::vector<int>{1, 3, 20, 200};
}

// Enough matrices for statistics, few enough for the CPU reference at n = 64, T = 200.
index_t batch_for(int n) {
  const index_t batch = std::clamp<index_t>(65536 / (index_t(n) * n), 96, 4096);
  return quick_mode() ? std::min<index_t>(batch, 48) : batch;
}

class SolverParity : public ::testing::TestWithParam<Case> {
 protected:
  template <class Real>
  void check() {
    const auto [which, n, T, precision] = GetParam();
    const SolverCase solver_case = solver_cases()[static_cast<std::size_t>(which)];
    const auto solver = SolverRegistry::global().create(solver_case.name, solver_case.options);
    auto rng = make_rng(static_cast<std::uint64_t>(which * 1000003 + n * 1009 + T));
    const Inputs<Real> in = make_inputs<Real>(rng, batch_for(n), n, T, /*bad_matrices=*/true);
    const Outputs<Real> cpu = solve_on(*solver, in, Device::cpu);
    const Outputs<Real> gpu = solve_on(*solver, in, Device::cuda);
    const ParityReport report = expect_parity(solver_case, in, cpu, gpu);
    std::printf("[ parity   ] %-22s %s n=%-2d T=%-3d B=%-5lld max rel. diff %.2e, near ties %lld\n",
                solver_case.label().c_str(), precision == Precision::float32 ? "f32" : "f64", n, T,
                static_cast<long long>(in.R.batch()), report.worst_error,
                static_cast<long long>(report.borderline));
  }
};

TEST_P(SolverParity, CudaMatchesCpu) {
  SINKGRAD_REQUIRE_GPU();
  if (std::get<3>(GetParam()) == Precision::float32)
    check<float>();
  else
    check<double>();
}

// G times 2^k far from 1 (float32 2^+-100, float64 2^+-600), where CG rescales its right-hand
// side (solvers/common/cg_math.hpp): CUDA gives the CPU's bits, statuses, iterations and history,
// warp and block teams alike.
template <class Real>
void expect_scaled_cg_parity() {
  const int far = sizeof(Real) == 4 ? 100 : 600;
  for (const SolverCase& solver_case : solver_cases()) {
    if (solver_case.name.rfind("cg", 0) != 0) continue;
    const auto solver = SolverRegistry::global().create(solver_case.name, solver_case.options);
    for (int n : {4, 16, 65})
      for (int k : {-far, far}) {
        SCOPED_TRACE(solver_case.label() + ", n = " + std::to_string(n) + ", 2^" +
                     std::to_string(k));
        auto rng = make_rng(static_cast<std::uint64_t>(n * 31 + k));
        Inputs<Real> in = make_inputs<Real>(rng, 64, n, 3, /*bad_matrices=*/false);
        for (index_t i = 0; i < in.G.batch() * n * n; ++i)
          in.G.data()[i] = std::ldexp(in.G.data()[i], k);
        const Outputs<Real> cpu = solve_on(*solver, in, Device::cpu);
        const Outputs<Real> gpu = solve_on(*solver, in, Device::cuda);
        EXPECT_EQ(gpu.status, cpu.status);
        EXPECT_EQ(gpu.iterations, cpu.iterations);
        EXPECT_EQ(0, std::memcmp(gpu.grad.data(), cpu.grad.data(),
                                 sizeof(Real) * static_cast<std::size_t>(in.G.batch() * n * n)));
        // the history's entries past the last iteration are NaN, whose bits differ: the
        // quiet_nan fill's 0 / 0 gives 0xffc00000 on x86 and 0x7fffffff on the GPU (float32)
        ASSERT_EQ(gpu.history.size(), cpu.history.size());
        int differing = 0;
        for (std::size_t i = 0; i < cpu.history.size(); ++i)
          if (std::isnan(cpu.history[i])
                  ? !std::isnan(gpu.history[i])
                  : std::memcmp(&gpu.history[i], &cpu.history[i], sizeof(Real)) != 0)
            ++differing;
        EXPECT_EQ(differing, 0) << "history entries with other bits (or NaN on one device only)";
      }
  }
}

TEST(SolverParityFarFromOne, CgMatchesTheCpuForGTimesAFarPowerOfTwo) {
  SINKGRAD_REQUIRE_GPU();
  expect_scaled_cg_parity<float>();
  expect_scaled_cg_parity<double>();
}

std::string case_name(const ::testing::TestParamInfo<Case>& param_info) {
  const auto [which, n, T, precision] = param_info.param;
  return solver_cases()[static_cast<std::size_t>(which)].label() + "_n" + std::to_string(n) + "_T" +
         std::to_string(T) + (precision == Precision::float32 ? "_f32" : "_f64");
}

INSTANTIATE_TEST_SUITE_P(
    AllSolvers, SolverParity,
    ::testing::Combine(::testing::Range(0, int(solver_cases().size())),
                       ::testing::ValuesIn(sizes()), ::testing::ValuesIn(iteration_counts()),
                       ::testing::Values(Precision::float32, Precision::float64)),
    case_name);

// Above n = 64 one block per matrix (kernels/cuda/block_team.cuh): 65 leaves 31 lanes of its
// last warp idle. (direct's plain system runs one thread per matrix at every n; at n = 100 in
// float64 its workspace still fits a block's shared memory.)
INSTANTIATE_TEST_SUITE_P(BlockTeam, SolverParity,
                         ::testing::Combine(::testing::Range(0, int(solver_cases().size())),
                                            ::testing::Values(65, 100), ::testing::Values(3, 20),
                                            ::testing::Values(Precision::float32,
                                                              Precision::float64)),
                         case_name);

}  // namespace
}  // namespace sinkgrad::testing
