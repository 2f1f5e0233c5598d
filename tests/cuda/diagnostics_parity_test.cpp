// SolveDiagnostics on CUDA against the CPU, bit for bit: device-resident batches (the
// diagnostics kernel, and the CG drivers' residual) and host batches staged through the GPU
// (violations on the host, the residual staged), on the same random inputs, saturated float32
// logits included. The gradients of the CG solvers are the CPU's bits; so their residuals are.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/solver_registry.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "tests/cuda/gpu_required.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
struct HostDiagnostics {
  explicit HostDiagnostics(index_t batch)
      : row(std::size_t(batch), Real(-1)),
        column(std::size_t(batch), Real(-1)),
        residual(std::size_t(batch), Real(-1)),
        zeros(std::size_t(batch), -1) {}
  SolveDiagnostics<Real> view() {
    return {row.data(), column.data(), residual.data(), zeros.data()};
  }
  std::vector<Real> row, column, residual;
  std::vector<std::int32_t> zeros;
};

// Equal bits, or NaN on both: a NaN's bits differ (quiet_nan's 0 / 0 is 0xffc00000 on x86 and
// 0x7fffffff on the GPU in float32).
template <class T>
void expect_same_bits(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  int differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = a[i] != a[i] && b[i] != b[i];
    if (!both_nan && std::memcmp(&a[i], &b[i], sizeof(T)) != 0) ++differing;
  }
  EXPECT_EQ(differing, 0) << what << ": entries with other bits (or NaN on one device only)";
}

template <class Real>
void expect_equal(const HostDiagnostics<Real>& cpu, const HostDiagnostics<Real>& gpu) {
  expect_same_bits(cpu.row, gpu.row, "row_violation");
  expect_same_bits(cpu.column, gpu.column, "column_violation");
  expect_same_bits(cpu.residual, gpu.residual, "relative_residual");
  expect_same_bits(cpu.zeros, gpu.zeros, "zero_entries");
}

// A solve of host batches on `device` (cuda: staged) with every diagnostic.
template <class Real>
HostDiagnostics<Real> host_solve(const BackwardSolver& solver, const HostBatch<Real>& M,
                                 const HostBatch<Real>& R, const HostBatch<Real>& G, int T,
                                 Device device) {
  HostDiagnostics<Real> d(R.batch());
  HostBatch<Real> grad(R.batch(), R.n());
  std::vector<SolveStatus> status(std::size_t(R.batch()));
  std::vector<std::int32_t> iterations(std::size_t(R.batch()));
  BackwardResult<Real> result{grad.view(), status.data(), iterations.data()};
  result.diagnostics = d.view();
  solver.solve({M.view(), R.view(), G.view(), T}, result, device);
  return d;
}

// The same with every batch in device memory.
template <class Real>
HostDiagnostics<Real> device_solve(const BackwardSolver& solver, const HostBatch<Real>& M,
                                   const HostBatch<Real>& R, const HostBatch<Real>& G, int T) {
  const index_t batch = R.batch();
  const auto count = std::size_t(batch);
  cuda::DeviceBatch<Real> dM(M), dR(R), dG(G), grad(batch, R.n());
  cuda::DeviceBuffer status(count * sizeof(SolveStatus)), iterations(count * sizeof(std::int32_t));
  cuda::DeviceBuffer row(count * sizeof(Real)), column(count * sizeof(Real)),
      residual(count * sizeof(Real)), zeros(count * sizeof(std::int32_t));
  BackwardResult<Real> result{grad.view(), status.as<SolveStatus>(), iterations.as<std::int32_t>()};
  result.diagnostics = {row.as<Real>(), column.as<Real>(), residual.as<Real>(),
                        zeros.as<std::int32_t>()};
  const BatchView<const Real> Mv = dM.view(), Rv = dR.view(), Gv = dG.view();
  solver.solve({Mv, Rv, Gv, T}, result, Device::cuda);
  HostDiagnostics<Real> d(batch);
  cuda::copy_to_host(d.row.data(), row.data(), row.bytes());
  cuda::copy_to_host(d.column.data(), column.data(), column.bytes());
  cuda::copy_to_host(d.residual.data(), residual.data(), residual.bytes());
  cuda::copy_to_host(d.zeros.data(), zeros.data(), zeros.bytes());
  return d;
}

template <class Real>
class DiagnosticsParity : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DiagnosticsParity, Precisions);

TYPED_TEST(DiagnosticsParity, CudaEqualsCpuBitForBit) {
  SINKGRAD_REQUIRE_GPU();
  using Real = TypeParam;
  auto rng = make_rng(920);
  const index_t B = 300;
  const char* solvers[][2] = {{"unrolled", ""},     {"cg_plain", "schur"},   {"cg_plain", "block"},
                              {"cg_corrected", ""}, {"direct", "corrected"}, {"direct", "plain"}};
  for (const int n : {4, 5, 16, 65})  // 65: the block team
    for (const int T : {1, 3})
      for (const double scale : {4.0, std::is_same_v<Real, float> ? 80.0 : 30.0}) {
        const auto M = uniform_batch<Real>(rng, B, n, -scale, scale);
        const auto G = normal_batch<Real>(rng, B, n);
        const auto R = forward(M, T);
        for (const auto& [name, system] : solvers) {
          if (n > 64 && std::string(name) == "direct") continue;  // the parity tests' sizes
          std::map<std::string, std::string> options;
          if (*system) options["system"] = system;
          const auto solver = SolverRegistry::global().create(name, options);
          SCOPED_TRACE(std::string(name) + " " + system + ", n = " + std::to_string(n) +
                       ", T = " + std::to_string(T) + ", |M| <= " + std::to_string(scale));
          const auto cpu = host_solve(*solver, M, R, G, T, Device::cpu);
          expect_equal(cpu, host_solve(*solver, M, R, G, T, Device::cuda));
          expect_equal(cpu, device_solve(*solver, M, R, G, T));
        }
      }
}

}  // namespace
}  // namespace sinkgrad::testing
