// The CUDA forward against the CPU forward: R, the column violation and the count of invalid
// matrices, host-resident and device-resident. Skipped without a GPU.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/forward_spec.hpp"
#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/cuda/parity_support.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
void check_forward(int n, int T) {
  auto rng = make_rng(static_cast<std::uint64_t>(n * 7919 + T));
  const index_t batch = std::clamp<index_t>(65536 / (index_t(n) * n), 64, 4096);
  Inputs<Real> in = make_inputs<Real>(rng, batch, n, 1, /*bad_matrices=*/true);
  in.M(9 % batch, 0, 0) = std::numeric_limits<Real>::quiet_NaN();  // a second invalid one

  HostBatch<Real> R_cpu(batch, n), R_gpu(batch, n, Real(-7));
  std::vector<Real> cv_cpu(static_cast<std::size_t>(batch)), cv_gpu(cv_cpu.size(), Real(-7));
  const index_t bad_cpu = sinkhorn_forward<Real>(in.M.view(), T, R_cpu.view(), cv_cpu.data());
  const index_t bad_gpu =
      sinkhorn_forward<Real>(in.M.view(), T, R_gpu.view(), cv_gpu.data(), Device::cuda);
  EXPECT_EQ(bad_cpu, bad_gpu);

  // Device-resident: same kernel, so the same bits.
  cuda::DeviceBatch<Real> M_dev(in.M), R_dev(batch, n);
  cuda::DeviceBuffer cv_dev(cv_cpu.size() * sizeof(Real));
  const index_t bad_dev =
      sinkhorn_forward<Real>(M_dev.view(), T, R_dev.view(), cv_dev.as<Real>(), Device::cuda);
  EXPECT_EQ(bad_dev, bad_cpu);
  const HostBatch<Real> R_back = R_dev.download();
  std::vector<Real> cv_back(cv_cpu.size());
  cuda::copy_to_host(cv_back.data(), cv_dev.data(), cv_dev.bytes());

  // exp(M + f + g) carries an absolute exponent error of a few eps |M|: the bound scales with it.
  const double eps = std::numeric_limits<Real>::epsilon();
  double worst = 0;  // in units of eps (1 + max |M|)
  const int nn = n * n;
  for (index_t b = 0; b < batch; ++b) {
    double largest = 0;
    for (int k = 0; k < nn; ++k)
      largest = std::max(largest, std::abs(double(in.M.data()[b * nn + k])));
    const double unit = eps * (1 + largest);
    const double bound = 64 * unit;
    for (int k = 0; k < nn; ++k) {
      const Real c = R_cpu.data()[b * nn + k], g = R_gpu.data()[b * nn + k];
      ASSERT_EQ(std::isnan(c), std::isnan(g)) << "matrix " << b;
      ASSERT_EQ(std::memcmp(&g, &R_back.data()[b * nn + k], sizeof(Real)), 0)
          << "device-resident and host-resident forwards differ, matrix " << b;
      if (std::isnan(c)) continue;
      const double error = std::abs(double(g) - double(c));  // entries lie in [0, 1]
      worst = std::max(worst, error / unit);
      ASSERT_LE(error, bound) << "matrix " << b << " entry " << k;
    }
    ASSERT_EQ(std::isnan(cv_cpu[b]), std::isnan(cv_gpu[b]));
    ASSERT_EQ(std::memcmp(&cv_gpu[b], &cv_back[b], sizeof(Real)), 0);
    if (!std::isnan(cv_cpu[b])) {
      ASSERT_NEAR(double(cv_gpu[b]), double(cv_cpu[b]), 4 * n * bound);
    }
  }
  std::printf(
      "[ forward  ] %s n=%-2d T=%-3d B=%-5lld max abs. diff %.1f eps (1 + max|M|), invalid %lld\n",
      sizeof(Real) == 8 ? "f64" : "f32", n, T, static_cast<long long>(batch), worst,
      static_cast<long long>(bad_cpu));
}

class ForwardParity : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ForwardParity, CudaMatchesCpu) {
  SINKGRAD_REQUIRE_GPU();
  const auto [n, T] = GetParam();
  check_forward<float>(n, T);
  check_forward<double>(n, T);
}

std::string size_name(const ::testing::TestParamInfo<std::tuple<int, int>>& param_info) {
  std::string name = "n";  // built by appending: GCC 12 warns (-Wrestrict) about "n" + string
  name += std::to_string(std::get<0>(param_info.param));
  name += "_T";
  name += std::to_string(std::get<1>(param_info.param));
  return name;
}

INSTANTIATE_TEST_SUITE_P(Sizes, ForwardParity,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7, 8, 16, 32, 64),
                                            ::testing::Values(1, 3, 20, 200)),
                         size_name);

// The block team above n = 64 (one block per matrix, its rows in global scratch) against the
// CPU's log-domain loop, up to its largest n.
INSTANTIATE_TEST_SUITE_P(BlockTeam, ForwardParity,
                         ::testing::Values(std::tuple{65, 3}, std::tuple{65, 20},
                                           std::tuple{100, 20}, std::tuple{100, 200},
                                           std::tuple{1024, 3}),
                         size_name);

// Finite logits up to the largest the type holds, every convention and launcher: the GPU's R is
// finite wherever the CPU's is (every matrix: tests/library/huge_logits_test.cpp), and the two
// agree but where potentials rounded to |M| eps decide a near-tie differently.
template <class Real>
void check_huge_logits(const char* convention, int n, double scale) {
  SCOPED_TRACE(std::string(convention) + " n = " + std::to_string(n) +
               " scale = " + std::to_string(scale));
  auto rng = make_rng(static_cast<std::uint64_t>(n * 31 + sizeof(Real)));
  const ForwardSpec spec = make_forward_spec(convention, std::nullopt);
  const index_t batch = n > 64 ? 16 : 256;
  const auto M = uniform_batch<Real>(rng, batch, n, -scale, scale);
  HostBatch<Real> R_cpu(batch, n), R_gpu(batch, n, Real(-7));
  EXPECT_EQ(sinkhorn_forward<Real>(M.view(), 20, R_cpu.view(), nullptr, Device::cpu, spec), 0);
  EXPECT_EQ(sinkhorn_forward<Real>(M.view(), 20, R_gpu.view(), nullptr, Device::cuda, spec), 0);
  const int nn = n * n;
  index_t differing = 0;
  for (index_t b = 0; b < batch; ++b) {
    double worst = 0;
    for (int k = 0; k < nn; ++k) {
      const Real g = R_gpu.data()[b * nn + k];
      ASSERT_TRUE(std::isfinite(g) && g >= 0 && g <= 1) << "matrix " << b << " entry " << k;
      worst = std::max(worst, std::abs(double(g) - double(R_cpu.data()[b * nn + k])));
    }
    differing += worst > 1e-3;
  }
  EXPECT_LE(differing, 1 + batch / 100);
}

// check(Real{}, convention, n, scale) for every convention, each n of sizes and the scales past
// |M| eps = 1 up to the largest each type holds.
template <class Check>
void for_each_huge_logits_case(const std::vector<int>& sizes, Check check) {
  for (const char* convention :
       {"columns_first", "rows_first", "tilekernels", "megatron_main", "magi2", "mhc_triton"})
    for (int n : sizes) {
      for (double scale : {1e10, 1e37}) check(float{}, convention, n, scale);
      for (double scale : {1e20, 1e300}) check(double{}, convention, n, scale);
    }
}

TEST(ForwardParity, HugeLogitsGiveAFiniteR) {
  SINKGRAD_REQUIRE_GPU();
  for_each_huge_logits_case({2, 4, 8, 16, 33, 65},
                            [](auto real, const char* convention, int n, double scale) {
                              check_huge_logits<decltype(real)>(convention, n, scale);
                            });
}

// The same logits through `unrolled`, whose log-domain replay forms every iterate's entries
// again from the potentials (tests/library/huge_logits_test.cpp on the CPU): on the GPU too
// every matrix is ok with a finite gradient, the one-thread, team and block forms alike, and
// the two devices agree but where rounding decides a near-tie differently.
template <class Real>
void check_huge_logits_unrolled(const char* convention, int n, double scale) {
  SCOPED_TRACE(std::string(convention) + " n = " + std::to_string(n) +
               " scale = " + std::to_string(scale));
  auto rng = make_rng(static_cast<std::uint64_t>(n * 37 + sizeof(Real)));
  const ForwardSpec spec = make_forward_spec(convention, std::nullopt);
  const index_t batch = n > 64 ? 16 : 128;
  Inputs<Real> in;
  in.T = 20;
  in.M = uniform_batch<Real>(rng, batch, n, -scale, scale);
  in.G = normal_batch<Real>(rng, batch, n);
  in.R = HostBatch<Real>(batch, n);
  ASSERT_EQ(sinkhorn_forward<Real>(in.M.view(), in.T, in.R.view(), nullptr, Device::cpu, spec), 0);
  const auto solver = SolverRegistry::global().create("unrolled", {});
  const auto cpu = solve_on(*solver, in, Device::cpu, spec);
  const auto gpu = solve_on(*solver, in, Device::cuda, spec);
  const int nn = n * n;
  index_t differing = 0;
  for (index_t b = 0; b < batch; ++b) {
    const auto k_b = static_cast<std::size_t>(b);
    ASSERT_EQ(cpu.status[k_b], SolveStatus::ok) << "cpu, matrix " << b;
    ASSERT_EQ(gpu.status[k_b], SolveStatus::ok) << "cuda, matrix " << b;
    double worst = 0, g_max = 0;
    for (int k = 0; k < nn; ++k) {
      const Real g = gpu.grad.data()[b * nn + k];
      ASSERT_TRUE(std::isfinite(g)) << "matrix " << b << " entry " << k;
      worst = std::max(worst, std::abs(double(g) - double(cpu.grad.data()[b * nn + k])));
      g_max = std::max(g_max, std::abs(double(in.G.data()[b * nn + k])));
    }
    differing += worst > 1e-3 * g_max;
  }
  EXPECT_LE(differing, 1 + batch / 100);
}

TEST(ForwardParity, HugeLogitsGiveAFiniteUnrolledGradient) {
  SINKGRAD_REQUIRE_GPU();
  for_each_huge_logits_case(
      quick_mode() ? std::vector<int>{4, 33} : std::vector<int>{2, 4, 8, 16, 33, 65},
      [](auto real, const char* convention, int n, double scale) {
        check_huge_logits_unrolled<decltype(real)>(convention, n, scale);
      });
}

// The synchronous forward reads its count of invalid matrices back through words it keeps and
// reuses (kernels/cuda/readback.hpp): calls from several threads at once, each with its own
// number of invalid matrices, each get their own count, every time.
TEST(ForwardCount, ConcurrentCallsEachCountTheirOwn) {
  SINKGRAD_REQUIRE_GPU();
  constexpr int threads = 4, n = 4, T = 20, repeats = 20;
  constexpr index_t batch = 1024;
  std::vector<int> wrong(threads, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&wrong, t] {
      try {
        HostBatch<float> M(batch, n, 0.5f);
        for (int k = 0; k <= t; ++k) M(k * 7, 0, 0) = std::numeric_limits<float>::quiet_NaN();
        cuda::DeviceBatch<float> M_dev(M), R_dev(batch, n);
        for (int r = 0; r < repeats; ++r)
          if (sinkhorn_forward<float>(M_dev.view(), T, R_dev.view(), nullptr, Device::cuda) !=
              t + 1)
            ++wrong[t];
      } catch (...) {
        wrong[t] = repeats;
      }
    });
  for (auto& worker : workers) worker.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace sinkgrad::testing
