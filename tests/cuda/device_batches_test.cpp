// Memory spaces and launch sizes: device-resident batches give the same bits as host-resident
// ones, a batch larger than one resident grid is solved completely, mixed memory spaces are
// refused, and a machine without a GPU gets a clear error.

#include <cstring>

#include "forward/sinkhorn_forward.hpp"
#include "tests/cuda/parity_support.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
void check_device_resident(const SolverCase& solver_case, const ForwardSpec& spec = {}, int n = 8) {
  const auto solver = SolverRegistry::global().create(solver_case.name, solver_case.options);
  auto rng = make_rng(11);
  const index_t batch = 1000;
  Inputs<Real> in = make_inputs<Real>(rng, batch, n, 20, /*bad_matrices=*/true);
  if (!is_default_forward(spec))
    sinkhorn_forward<Real>(in.M.view(), 20, in.R.view(), nullptr, Device::cpu, spec);
  const Outputs<Real> staged = solve_on(*solver, in, Device::cuda, spec);

  cuda::DeviceBatch<Real> M(in.M), R(in.R), G(in.G), grad(batch, n);
  cuda::DeviceBuffer status(batch * sizeof(SolveStatus)), iterations(batch * sizeof(std::int32_t));
  const int stride = solver->history_length(n, precision_of<Real>());
  cuda::DeviceBuffer history(static_cast<std::size_t>(batch * stride) * sizeof(Real));
  // Poisoned as solve_on poisons the host rows: a failed matrix's row is never written.
  const std::vector<Real> poison(static_cast<std::size_t>(batch * stride), Real(-7));
  cuda::copy_to_device(history.data(), poison.data(), history.bytes());
  BackwardProblem<Real> problem{M.view(), R.view(), G.view(), 20, spec};
  BackwardResult<Real> result{grad.view(), status.as<SolveStatus>(), iterations.as<std::int32_t>(),
                              stride > 0 ? history.as<Real>() : nullptr, stride};
  solver->solve(problem, result, Device::cuda);

  const HostBatch<Real> grad_back = grad.download();
  std::vector<SolveStatus> status_back(static_cast<std::size_t>(batch));
  std::vector<std::int32_t> iterations_back(static_cast<std::size_t>(batch));
  cuda::copy_to_host(status_back.data(), status.data(), status.bytes());
  cuda::copy_to_host(iterations_back.data(), iterations.data(), iterations.bytes());
  EXPECT_EQ(status_back, staged.status);
  EXPECT_EQ(iterations_back, staged.iterations);
  EXPECT_EQ(std::memcmp(grad_back.data(), staged.grad.data(), grad.bytes()), 0)
      << "device-resident and host-resident solves differ";
  if (stride > 0) {
    std::vector<Real> history_back(static_cast<std::size_t>(batch * stride));
    cuda::copy_to_host(history_back.data(), history.data(), history.bytes());
    EXPECT_EQ(std::memcmp(history_back.data(), staged.history.data(), history.bytes()), 0);
  }
}

TEST(DeviceBatches, DeviceResidentEqualsHostResident) {
  SINKGRAD_REQUIRE_GPU();
  for (const SolverCase& solver_case : solver_cases()) {
    SCOPED_TRACE(solver_case.label());
    check_device_resident<float>(solver_case);
    check_device_resident<double>(solver_case);
  }
}

// Under a base that is no scaling of exp(M) the implicit gradient is carried to M by a kernel of
// its own after the solve (core/log_base_chain.hpp): the same launch for both memory spaces.
TEST(DeviceBatches, CarriedGradientIsTheSameResidentOrStaged) {
  SINKGRAD_REQUIRE_GPU();
  std::vector<SolverCase> cases = solver_cases();
  cases.push_back({"auto", {}});
  for (const ForwardSpec& spec :
       {make_forward_spec("tilekernels"), make_forward_spec("mhc_triton")})
    for (const SolverCase& solver_case : cases) {
      if (solver_case.name == "unrolled") continue;
      for (const int n : {4, 33}) {
        SCOPED_TRACE(solver_case.label() + " " + describe(spec) + " n " + std::to_string(n));
        check_device_resident<float>(solver_case, spec, n);
        check_device_resident<double>(solver_case, spec, n);
      }
    }
}

// 2^21 + 3 matrices: several times what one grid holds resident, so every thread strides.
TEST(DeviceBatches, BatchLargerThanOneGrid) {
  SINKGRAD_REQUIRE_GPU();
  auto rng = make_rng(12);
  const index_t batch = (index_t(1) << 21) + 3;
  const int n = 2;
  const Inputs<float> in = make_inputs<float>(rng, batch, n, 3, /*bad_matrices=*/true);
  HostBatch<float> R_gpu(batch, n, -7.0f);
  EXPECT_EQ(sinkhorn_forward<float>(in.M.view(), 3, R_gpu.view(), nullptr, Device::cuda), 1);
  const HostBatch<float> R_cpu = forward(in.M, 3);  // in.R has bad matrices planted
  for (index_t k = 0; k < R_cpu.size(); ++k)
    if (!std::isnan(R_cpu.data()[k])) {
      ASSERT_NEAR(R_gpu.data()[k], R_cpu.data()[k], 1e-5) << k;
    }
  for (const SolverCase& solver_case :
       {SolverCase{"cg_corrected", {}}, SolverCase{"unrolled", {}}}) {
    SCOPED_TRACE(solver_case.name);
    const auto solver = SolverRegistry::global().create(solver_case.name);
    const Outputs<float> cpu = solve_on(*solver, in, Device::cpu);
    const Outputs<float> gpu = solve_on(*solver, in, Device::cuda);
    expect_parity(solver_case, in, cpu, gpu);
  }
}

TEST(DeviceBatches, MixedMemorySpacesAreRefused) {
  SINKGRAD_REQUIRE_GPU();
  auto rng = make_rng(13);
  const Inputs<double> in = make_inputs<double>(rng, 4, 3, 5, false);
  cuda::DeviceBatch<double> R(in.R);
  HostBatch<double> grad(4, 3);
  std::vector<SolveStatus> status(4);
  std::vector<std::int32_t> iterations(4);
  const auto solver = SolverRegistry::global().create("cg_corrected");
  BackwardProblem<double> problem{{}, R.view(), in.G.view(), 5};
  BackwardResult<double> result{grad.view(), status.data(), iterations.data()};
  EXPECT_THROW(solver->solve(problem, result, Device::cuda), Error);
}

TEST(DeviceBatches, NoGpuGivesAClearError) {
  if (cuda_available())
    GTEST_SKIP() << "a CUDA device is present: the no-device error is not reachable";
#if !defined(SINKGRAD_WITH_CUDA)
  GTEST_SKIP() << "built without CUDA: the cuda device is not offered";
#else
  auto rng = make_rng(14);
  const Inputs<double> in = make_inputs<double>(rng, 4, 3, 5, false);
  const auto solver = SolverRegistry::global().create("cg_corrected");
  try {
    solve_on(*solver, in, Device::cuda);
    FAIL() << "a cuda solve without a GPU must throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("no CUDA device"), std::string::npos) << error.what();
  }
  HostBatch<double> R(4, 3);
  EXPECT_THROW(sinkhorn_forward<double>(in.M.view(), 5, R.view(), nullptr, Device::cuda), Error);
#endif
}

}  // namespace
}  // namespace sinkgrad::testing
