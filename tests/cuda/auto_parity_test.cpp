// `auto` and the exact fallback on CUDA: per matrix, the bits of cuda cg_corrected where that
// succeeded within max_violation and the bits of cuda unrolled (status fallback) elsewhere,
// through the status-selected subset of every launcher (warp teams, transposed tiles for rows_first
// and tilekernels, the block team above n = 64); statuses as the CPU's; the keep mode
// (on_failure="unrolled") replacing only the failures, in device memory and on a stream.
// Skipped without a GPU.

#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/forward_spec.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"
#include "tests/cuda/parity_support.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
void check_auto_on_cuda(const char* convention, int n, int T,
                        const std::map<std::string, std::string>& options) {
  SCOPED_TRACE(std::string(convention) + " n = " + std::to_string(n) + " T = " + std::to_string(T));
  auto rng = make_rng(static_cast<std::uint64_t>(n * 131 + T));
  ForwardSpec spec;
  spec.convention = parse_forward_convention(convention);
  Inputs<Real> in = make_inputs<Real>(rng, n > 64 ? 40 : 300, n, T, /*bad_matrices=*/true);
  sinkhorn_forward<Real>(in.M.view(), T, in.R.view(), nullptr, Device::cpu, spec);
  std::map<std::string, std::string> cg_options = options;
  cg_options.erase("max_violation");
  const auto automatic = SolverRegistry::global().create("auto", options);
  const auto corrected = SolverRegistry::global().create("cg_corrected", cg_options);
  const auto exact = SolverRegistry::global().create("unrolled");
  const Outputs<Real> gpu = solve_on(*automatic, in, Device::cuda, spec);
  const Outputs<Real> cpu = solve_on(*automatic, in, Device::cpu, spec);
  const Outputs<Real> gpu_corrected = solve_on(*corrected, in, Device::cuda, spec);
  const Outputs<Real> gpu_exact = solve_on(*exact, in, Device::cuda, spec);
  const int nn = n * n;
  int fallbacks = 0, differing_status = 0;
  for (index_t b = 0; b < in.R.batch(); ++b) {
    const auto k = static_cast<std::size_t>(b);
    differing_status += gpu.status[k] != cpu.status[k];
    const Real* got = gpu.grad.data() + b * nn;
    if (gpu.status[k] == SolveStatus::ok) {
      EXPECT_EQ(gpu_corrected.status[k], SolveStatus::ok) << "matrix " << b;
      EXPECT_TRUE(same_bits(got, gpu_corrected.grad.data() + b * nn, nn)) << "matrix " << b;
    } else {
      ++fallbacks;
      const SolveStatus expected =
          gpu_exact.status[k] == SolveStatus::ok ? SolveStatus::fallback : gpu_exact.status[k];
      EXPECT_EQ(gpu.status[k], expected) << "matrix " << b;
      EXPECT_EQ(gpu.iterations[k], gpu_exact.iterations[k]) << "matrix " << b;
      EXPECT_TRUE(same_bits(got, gpu_exact.grad.data() + b * nn, nn)) << "matrix " << b;
    }
  }
  // A CG stop or a violation within rounding of its threshold may go either way on the two
  // devices (unrolled's exp and log differ in the last bit): rare.
  EXPECT_LE(differing_status, 2 + in.R.batch() / 50);
  std::printf("[ auto     ] %s %s n=%d T=%d: %d of %lld fallback, %d statuses differ from cpu\n",
              sizeof(Real) == 4 ? "f32" : "f64", convention, n, T, fallbacks,
              static_cast<long long>(in.R.batch()), differing_status);
}

TEST(AutoOnCuda, CorrectedBitsWhereSolvedUnrolledBitsElsewhere) {
  SINKGRAD_REQUIRE_GPU();
  for (const char* convention :
       {"columns_first", "rows_first", "tilekernels", "megatron_main", "magi2", "mhc_triton"})
    for (int n : {3, 4, 8, 16, 33, 65})
      for (int T : {1, 20}) {
        check_auto_on_cuda<float>(convention, n, T, {});
        check_auto_on_cuda<double>(convention, n, T, {{"max_iterations", "2"}});
      }
}

// mHC's copied streams (G constant along the side the forward leaves inexact): the implicit
// gradient is 0 there, so auto's gradient floor sends every matrix not converged to rounding to the
// exact fallback, on CUDA as on the CPU, through every launcher.
template <class Real>
void check_copied_streams(const char* convention, bool rows_inexact, int n) {
  SCOPED_TRACE(std::string(convention) + " n = " + std::to_string(n));
  auto rng = make_rng(static_cast<std::uint64_t>(n * 977 + sizeof(Real)));
  const ForwardSpec spec = make_forward_spec(convention, std::nullopt);
  Inputs<Real> in = make_inputs<Real>(rng, n > 64 ? 40 : 600, n, 10, /*bad_matrices=*/false);
  sinkhorn_forward<Real>(in.M.view(), in.T, in.R.view(), nullptr, Device::cpu, spec);
  for (index_t b = 0; b < in.G.batch(); ++b)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) in.G(b, i, j) = rows_inexact ? in.G(b, i, 0) : in.G(b, 0, j);
  const auto automatic = SolverRegistry::global().create("auto");
  const Outputs<Real> gpu = solve_on(*automatic, in, Device::cuda, spec);
  const Outputs<Real> cpu = solve_on(*automatic, in, Device::cpu, spec);
  const Outputs<Real> exact =
      solve_on(*SolverRegistry::global().create("unrolled"), in, Device::cuda, spec);
  const int nn = n * n;
  int fallbacks = 0, differing_status = 0;
  for (index_t b = 0; b < in.R.batch(); ++b) {
    const auto k = static_cast<std::size_t>(b);
    differing_status += gpu.status[k] != cpu.status[k];
    if (gpu.status[k] == SolveStatus::ok) continue;
    ++fallbacks;
    EXPECT_EQ(gpu.status[k], SolveStatus::fallback) << "matrix " << b;
    EXPECT_TRUE(same_bits(gpu.grad.data() + b * nn, exact.grad.data() + b * nn, nn))
        << "matrix " << b;
  }
  EXPECT_LE(differing_status, 2 + in.R.batch() / 50);
  // Those left ok converged to rounding (a few percent of N(0, 1) and 3 N(0, 1) logits at T = 10).
  EXPECT_GE(fallbacks, in.R.batch() / 2) << "copied streams no longer reach the gradient floor";
  std::printf("[ copied   ] %s %s n=%d: %d of %lld fallback, %d statuses differ from cpu\n",
              sizeof(Real) == 4 ? "f32" : "f64", convention, n, fallbacks,
              static_cast<long long>(in.R.batch()), differing_status);
}

TEST(AutoOnCuda, CopiedStreamsGetTheExactGradient) {
  SINKGRAD_REQUIRE_GPU();
  for (const auto& [convention, rows_inexact] :
       {std::pair{"rows_first", true}, std::pair{"tilekernels", true},
        std::pair{"mhc_triton", true}, std::pair{"columns_first", false},
        std::pair{"magi2", false}})
    for (int n : {4, 8, 16, 33, 65}) {
      check_copied_streams<float>(convention, rows_inexact, n);
      check_copied_streams<double>(convention, rows_inexact, n);
    }
}

// The keep mode in device memory on a stream of its own: only failures replaced, statuses left.
template <class Real>
void check_keep_mode(int n) {
  auto rng = make_rng(static_cast<std::uint64_t>(n));
  const int T = 3;
  const Inputs<Real> in = make_inputs<Real>(rng, 500, n, T, /*bad_matrices=*/true);
  const auto starved = SolverRegistry::global().create("cg_plain", {{"max_iterations", "1"}});
  const Outputs<Real> first = solve_on(*starved, in, Device::cuda);
  const Outputs<Real> exact =
      solve_on(*SolverRegistry::global().create("unrolled"), in, Device::cuda);
  const index_t batch = in.R.batch();
  cuda::DeviceBatch<Real> M(in.M), G(in.G), grad(first.grad);
  cuda::DeviceBuffer status(sizeof(SolveStatus) * static_cast<std::size_t>(batch));
  cuda::copy_to_device(status.data(), first.status.data(), status.bytes());
  const BackwardProblem<Real> problem{
      M.view(), {nullptr, batch, n, MemorySpace::device}, G.view(), T, {}, nullptr};
  replace_by_unrolled(problem,
                      BackwardResult<Real>{grad.view(), status.template as<SolveStatus>(), nullptr},
                      Device::cuda, FallbackStatus::keep);
  cuda::synchronize("the keep-mode test");
  const HostBatch<Real> out = grad.download();
  std::vector<SolveStatus> after(static_cast<std::size_t>(batch));
  cuda::copy_to_host(after.data(), status.data(), status.bytes());
  EXPECT_EQ(after, first.status);
  const int nn = n * n;
  for (index_t b = 0; b < batch; ++b) {
    const Real* expected = is_success(first.status[static_cast<std::size_t>(b)])
                               ? first.grad.data() + b * nn
                               : exact.grad.data() + b * nn;
    EXPECT_TRUE(same_bits(out.data() + b * nn, expected, nn)) << "matrix " << b;
  }
}

TEST(AutoOnCuda, KeepModeReplacesOnlyFailures) {
  SINKGRAD_REQUIRE_GPU();
  for (int n : {4, 16, 65}) {
    check_keep_mode<float>(n);
    check_keep_mode<double>(n);
  }
}

// A batch large enough that every block reads several windows of statuses, with failures
// scattered (one in 97), in a cluster longer than a window (every matrix of [40000, 43000)) and
// of every kind: each selected matrix gets unrolled's bits and, in mark mode, status fallback;
// every other matrix keeps its gradient and status.
template <class Real>
void check_scattered_and_clustered(int n, FallbackStatus mode) {
  SCOPED_TRACE("n = " + std::to_string(n) + (mode == FallbackStatus::mark ? " mark" : " keep"));
  auto rng = make_rng(static_cast<std::uint64_t>(7 * n));
  const int T = 3;
  // More matrices than the blocks of one launch read in a sweep of windows (4 * 128 statuses).
  const index_t batch = n <= 4 ? index_t(1) << 21 : index_t(1) << 19;
  const Inputs<Real> in = make_inputs<Real>(rng, batch, n, T, /*bad_matrices=*/false);
  const Outputs<Real> exact =
      solve_on(*SolverRegistry::global().create("unrolled"), in, Device::cuda);
  std::vector<SolveStatus> first(static_cast<std::size_t>(batch), SolveStatus::ok);
  const SolveStatus kinds[] = {SolveStatus::not_converged, SolveStatus::breakdown,
                               SolveStatus::fallback, SolveStatus::ill_conditioned};
  for (index_t b = 0; b < batch; ++b)
    if (b % 97 == 5 || (b >= 40000 && b < 43000))
      first[static_cast<std::size_t>(b)] = kinds[(b / 97) % 4];
  const auto selected = [&](index_t b) {
    const SolveStatus s = first[static_cast<std::size_t>(b)];
    return mode == FallbackStatus::mark ? s != SolveStatus::ok : !is_success(s);
  };
  const HostBatch<Real> zero(batch, n, Real(0));
  cuda::DeviceBatch<Real> M(in.M), G(in.G), grad(zero);
  cuda::DeviceBuffer status(sizeof(SolveStatus) * static_cast<std::size_t>(batch));
  cuda::DeviceBuffer iterations(sizeof(std::int32_t) * static_cast<std::size_t>(batch));
  cuda::copy_to_device(status.data(), first.data(), status.bytes());
  cuda::fill_bytes(iterations.data(), 0, iterations.bytes());
  const BackwardProblem<Real> problem{
      M.view(), {nullptr, batch, n, MemorySpace::device}, G.view(), T, {}, nullptr};
  replace_by_unrolled(problem,
                      BackwardResult<Real>{grad.view(), status.template as<SolveStatus>(),
                                           iterations.template as<std::int32_t>()},
                      Device::cuda, mode);
  cuda::synchronize("the scattered and clustered fallback test");
  const HostBatch<Real> out = grad.download();
  std::vector<SolveStatus> after(static_cast<std::size_t>(batch));
  cuda::copy_to_host(after.data(), status.data(), status.bytes());
  const int nn = n * n;
  index_t replaced = 0, wrong_bits = 0, wrong_status = 0;
  for (index_t b = 0; b < batch; ++b) {
    const auto k = static_cast<std::size_t>(b);
    SolveStatus expected = first[k];
    if (selected(b)) {
      ++replaced;
      wrong_bits += !same_bits(out.data() + b * nn, exact.grad.data() + b * nn, nn);
      if (mode == FallbackStatus::mark)
        expected = exact.status[k] == SolveStatus::ok ? SolveStatus::fallback : exact.status[k];
    } else {
      wrong_bits += !same_bits(out.data() + b * nn, zero.data() + b * nn, nn);
    }
    wrong_status += after[k] != expected;
  }
  EXPECT_GT(replaced, 3000);
  EXPECT_EQ(wrong_bits, 0);
  EXPECT_EQ(wrong_status, 0);
}

TEST(AutoOnCuda, FallbackFindsScatteredAndClusteredFailures) {
  SINKGRAD_REQUIRE_GPU();
  for (int n : {4, 16})
    for (FallbackStatus mode : {FallbackStatus::mark, FallbackStatus::keep}) {
      check_scattered_and_clustered<float>(n, mode);
      if (n == 4) check_scattered_and_clustered<double>(n, mode);
    }
}

}  // namespace
}  // namespace sinkgrad::testing
