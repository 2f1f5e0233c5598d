// The carry of an implicit gradient to M in device memory (kernels/cuda/log_base_chain.cu)
// against the CPU's text row by row (core/log_base_chain.hpp): one thread per row and teams of 8
// lanes owning one entry, uneven counts and hundreds, batches ending in a partial sweep,
// matrices marked fallback left alone. Skipped without a GPU.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/device_runtime.hpp"
#include "core/log_base_chain.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "tests/cuda/gpu_required.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
void check_carry(const ForwardSpec& spec, int n, index_t batch, double scale) {
  SCOPED_TRACE(describe(spec) + " n " + std::to_string(n) + " B " + std::to_string(batch) +
               (sizeof(Real) == 8 ? " f64" : " f32"));
  auto rng = make_rng(static_cast<std::uint64_t>(5100 + n));
  const auto M = convert<Real>(normal_batch<double>(rng, batch, n, scale));
  const auto g = convert<Real>(normal_batch<double>(rng, batch, n, 1.0));
  std::vector<SolveStatus> status(static_cast<std::size_t>(batch), SolveStatus::ok);
  for (index_t b = 1; b < batch; b += 3)
    status[static_cast<std::size_t>(b)] = SolveStatus::fallback;

  cuda::DeviceBatch<Real> M_dev(M), g_dev(g);
  cuda::DeviceBuffer status_dev(status.size() * sizeof(SolveStatus));
  cuda::copy_to_device(status_dev.data(), status.data(), status_dev.bytes());
  const BackwardResult<Real> result{g_dev.view(), status_dev.as<SolveStatus>(), nullptr};
  device::carry_to_logits<Real>(M_dev.view(), spec, result, nullptr);
  cuda::synchronize("the carry");
  const HostBatch<Real> gpu = g_dev.download();

  const ForwardBase base = forward_recipe(spec.convention).base;
  HostBatch<Real> cpu = g;
  for (index_t row = 0; row < batch * n; ++row)
    if (status[static_cast<std::size_t>(row / n)] != SolveStatus::fallback)
      carry_row_to_logits(RowLanes(n), base, static_cast<Real>(spec.eps), M.data() + row * n,
                          cpu.data() + row * n);
  // The same operations in the same order; only exp may differ by an ulp between the devices.
  const double tolerance = sizeof(Real) == 8 ? 1e-13 : 2e-5;
  index_t unchanged = 0;
  for (index_t k = 0; k < cpu.size(); ++k) {
    const double a = cpu.data()[k], b = gpu.data()[k];
    ASSERT_TRUE(std::isfinite(b)) << k;
    ASSERT_LE(std::fabs(a - b), tolerance * (1 + std::fabs(a))) << "entry " << k;
    if (status[static_cast<std::size_t>(k / (index_t(n) * n))] == SolveStatus::fallback) {
      ASSERT_EQ(b, g.data()[k]) << "a fallback matrix was changed, entry " << k;
      ++unchanged;
    }
  }
  if (batch > 1) {
    EXPECT_GT(unchanged, 0);
  }
}

TEST(LogBaseChainParity, CarryOnCudaMatchesTheCpuText) {
  SINKGRAD_REQUIRE_GPU();
  for (const ForwardSpec& spec :
       {make_forward_spec("tilekernels", 1e-6), make_forward_spec("tilekernels", 1e-3),
        make_forward_spec("mhc_triton", 1e-8)})
    for (const int n : {1, 2, 3, 4, 5, 8, 9, 16, 31, 32, 33, 100}) {
      // Batches that end in a partial stage (and a single matrix).
      for (const index_t batch : {index_t(1), index_t(7), index_t(1000)}) {
        check_carry<float>(spec, n, batch, 4.0);
        check_carry<double>(spec, n, batch, 4.0);
      }
    }
}

// Long rows: many entries per lane, the butterfly over sums of hundreds of terms.
TEST(LogBaseChainParity, LongRowsMatchTheCpuText) {
  SINKGRAD_REQUIRE_GPU();
  const ForwardSpec spec = make_forward_spec("tilekernels", 1e-6);
  check_carry<double>(spec, 3001, 2, 4.0);
  check_carry<float>(spec, 6200, 2, 4.0);
}

}  // namespace
}  // namespace sinkgrad::testing
