// kernels/cuda/per_matrix_launch.cuh as a plugin solver would use it: a functor and an extended
// device lambda, a workspace small and one too large for the default 48 KB of shared memory,
// history rows, and a batch that needs several grid strides. Skipped without a GPU.

#include <numeric>
#include <vector>

#include "kernels/cuda/device_memory.hpp"
#include "kernels/cuda/per_matrix_launch.cuh"
#include "tests/cuda/gpu_required.hpp"

namespace sinkgrad::testing {
namespace {

// Writes b + k into its workspace, reads it back and reports the sum as the iteration count.
struct WorkspaceSum {
  std::size_t workspace;
  __device__ MatrixOutcome operator()(index_t b, float* work, float* history) const {
    for (std::size_t k = 0; k < workspace; ++k) work[k] = float((b + index_t(k)) % 1000);
    long long sum = 0;
    for (std::size_t k = 0; k < workspace; ++k) sum += static_cast<long long>(work[k]);
    if (history != nullptr) history[0] = float(b % 4096);
    return {b % 3 == 0 ? SolveStatus::not_converged : SolveStatus::ok, int(sum % 100000)};
  }
};

long long expected_sum(index_t b, std::size_t workspace) {
  long long sum = 0;
  for (std::size_t k = 0; k < workspace; ++k) sum += (b + index_t(k)) % 1000;
  return sum % 100000;
}

void run_and_check(index_t batch, std::size_t workspace) {
  cuda::DeviceBuffer status(batch * sizeof(SolveStatus)), iterations(batch * sizeof(std::int32_t));
  cuda::DeviceBuffer history(batch * 2 * sizeof(float));
  BackwardResult<float> result{
      {}, status.as<SolveStatus>(), iterations.as<std::int32_t>(), history.as<float>(), 2};
  cuda::launch_per_matrix<float>(result, batch, workspace, WorkspaceSum{workspace});
  cuda::synchronize("the launch_per_matrix test");
  std::vector<SolveStatus> s(static_cast<std::size_t>(batch));
  std::vector<std::int32_t> it(s.size());
  std::vector<float> h(s.size() * 2);
  cuda::copy_to_host(s.data(), status.data(), status.bytes());
  cuda::copy_to_host(it.data(), iterations.data(), iterations.bytes());
  cuda::copy_to_host(h.data(), history.data(), history.bytes());
  for (index_t b = 0; b < batch; ++b) {
    ASSERT_EQ(s[b], b % 3 == 0 ? SolveStatus::not_converged : SolveStatus::ok) << b;
    ASSERT_EQ(it[b], expected_sum(b, workspace)) << b;
    ASSERT_EQ(h[b * 2], float(b % 4096)) << b;
  }
}

TEST(LaunchPerMatrix, FunctorSmallWorkspaceManyStrides) {
  SINKGRAD_REQUIRE_GPU();
  run_and_check((index_t(1) << 20) + 17, 5);
}

TEST(LaunchPerMatrix, WorkspaceBeyondDefaultSharedMemory) {
  SINKGRAD_REQUIRE_GPU();
  run_and_check(1001, 20000);  // 80 KB per matrix: opt-in shared memory, 2 matrices per block
}

TEST(LaunchPerMatrix, WorkspaceTooLargeIsAnError) {
  SINKGRAD_REQUIRE_GPU();
  BackwardResult<float> result{};
  EXPECT_THROW(cuda::launch_per_matrix<float>(result, 10, std::size_t(1) << 20, WorkspaceSum{1}),
               Error);
}

// An extended lambda's enclosing function must not be a private or protected member (a gtest
// TEST body is one), hence a free function.
void run_lambda_batch() {
  const index_t batch = 5000;
  cuda::DeviceBuffer status(batch * sizeof(SolveStatus)), iterations(batch * sizeof(std::int32_t));
  BackwardResult<double> result{{}, status.as<SolveStatus>(), iterations.as<std::int32_t>()};
  cuda::launch_per_matrix<double>(result, batch, 3,
                                  [] __device__(index_t b, double* work, double*) {
                                    work[0] = double(b);
                                    work[2] = 2 * work[0];
                                    return MatrixOutcome{SolveStatus::ok, int(work[2])};
                                  });
  cuda::synchronize("the launch_per_matrix lambda test");
  std::vector<std::int32_t> it(static_cast<std::size_t>(batch));
  cuda::copy_to_host(it.data(), iterations.data(), iterations.bytes());
  for (index_t b = 0; b < batch; ++b) ASSERT_EQ(it[b], 2 * b);
}

TEST(LaunchPerMatrix, ExtendedLambda) {
  SINKGRAD_REQUIRE_GPU();
  run_lambda_batch();
}

}  // namespace
}  // namespace sinkgrad::testing
