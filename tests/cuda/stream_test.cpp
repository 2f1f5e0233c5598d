// Stream-ordered solves (BackwardSolver::solve_async, sinkhorn_forward_async): on a stream of
// the caller's, without waiting, the same bits as the waiting solve; host memory is refused.

#include <cuda_runtime.h>

#include <cstring>

#include "forward/sinkhorn_forward.hpp"
#include "kernels/cuda/check.hpp"
#include "tests/cuda/parity_support.hpp"
#include "tests/cuda/side_stream.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
void check_on_stream(const SolverCase& solver_case) {
  const auto solver = SolverRegistry::global().create(solver_case.name, solver_case.options);
  auto rng = make_rng(21);
  const int n = 8;
  const index_t batch = 3000;
  const Inputs<Real> in = make_inputs<Real>(rng, batch, n, 20, /*bad_matrices=*/true);
  const SideStream stream;

  cuda::DeviceBatch<Real> M(in.M), R(batch, n), G(in.G), grad(batch, n);
  cuda::DeviceBuffer status(batch * sizeof(SolveStatus)), iterations(batch * sizeof(std::int32_t));
  cuda::synchronize("uploads");
  sinkhorn_forward_async<Real>(M.view(), 20, R.view(), stream.handle);
  BackwardProblem<Real> problem{M.view(), R.view(), G.view(), 20, ForwardSpec{}, stream.handle};
  BackwardResult<Real> result{grad.view(), status.as<SolveStatus>(), iterations.as<std::int32_t>()};
  solver->solve_async(problem, result);
  SINKGRAD_CUDA_CHECK(cudaStreamSynchronize(stream.handle));

  // The reference: the waiting solve (host batches staged through the GPU) from the R that the
  // stream-ordered forward wrote.
  Inputs<Real> same = in;
  same.R = R.download();
  const Outputs<Real> reference = solve_on(*solver, same, Device::cuda);
  const HostBatch<Real> grad_back = grad.download();
  std::vector<SolveStatus> status_back(static_cast<std::size_t>(batch));
  cuda::copy_to_host(status_back.data(), status.data(), status.bytes());
  EXPECT_EQ(status_back, reference.status);
  EXPECT_EQ(std::memcmp(grad_back.data(), reference.grad.data(), grad.bytes()), 0)
      << "a solve on a stream differs from the waiting solve";
}

TEST(StreamOrdered, SolveAsyncOnAStreamEqualsSolve) {
  SINKGRAD_REQUIRE_GPU();
  for (const SolverCase& solver_case : solver_cases()) {
    SCOPED_TRACE(solver_case.label());
    check_on_stream<float>(solver_case);
    check_on_stream<double>(solver_case);
  }
}

TEST(StreamOrdered, HostMemoryIsRefused) {
  SINKGRAD_REQUIRE_GPU();
  auto rng = make_rng(22);
  const Inputs<double> in = make_inputs<double>(rng, 4, 3, 5, false);
  HostBatch<double> grad(4, 3);
  std::vector<SolveStatus> status(4);
  std::vector<std::int32_t> iterations(4);
  const auto solver = SolverRegistry::global().create("cg_corrected");
  try {
    solver->solve_async({in.M.view(), in.R.view(), in.G.view(), 5},
                        {grad.view(), status.data(), iterations.data()});
    FAIL() << "a stream-ordered solve of host memory must throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("device memory"), std::string::npos) << error.what();
  }
  HostBatch<double> R(4, 3);
  EXPECT_THROW(sinkhorn_forward_async<double>(in.M.view(), 5, R.view(), nullptr), Error);
}

}  // namespace
}  // namespace sinkgrad::testing
