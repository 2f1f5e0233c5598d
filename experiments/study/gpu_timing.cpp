#include "experiments/study/gpu_timing.hpp"

#if defined(SINKGRAD_WITH_CUDA)
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/cuda/device_memory.hpp"

namespace sinkgrad::study {
namespace {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("timing on cuda: ") + what + ": " + cudaGetErrorString(status));
}

}  // namespace

template <class Real>
std::vector<double> time_on_gpu(const BackwardSolver& solver, const BackwardProblem<Real>& host,
                                int repeats) {
  const index_t batch = host.grad_output.batch;
  const int n = host.grad_output.n;
  const auto bytes = static_cast<std::size_t>(host.grad_output.size()) * sizeof(Real);
  const auto upload = [&](BatchView<const Real> view, cuda::DeviceBuffer& buffer) {
    buffer = cuda::DeviceBuffer(bytes);
    cuda::copy_to_device(buffer.data(), view.data, bytes);
    return BatchView<const Real>{buffer.as<const Real>(), batch, n, MemorySpace::device};
  };
  cuda::DeviceBuffer M, R, G;
  BackwardProblem<Real> problem = host;
  problem.logits = upload(host.logits, M);
  problem.forward_output = upload(host.forward_output, R);
  problem.grad_output = upload(host.grad_output, G);
  cuda::DeviceBuffer gradient(bytes);
  cuda::DeviceBuffer status(static_cast<std::size_t>(batch) * sizeof(SolveStatus));
  cuda::DeviceBuffer iterations(static_cast<std::size_t>(batch) * sizeof(std::int32_t));
  const BackwardResult<Real> result{{gradient.as<Real>(), batch, n, MemorySpace::device},
                                    status.as<SolveStatus>(),
                                    iterations.as<std::int32_t>()};
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> seconds;
  try {
    solver.solve(problem, result, Device::cuda);
    for (int repeat = 0; repeat < repeats; ++repeat) {
      check_cuda(cudaEventRecord(start, nullptr), "cudaEventRecord");
      solver.solve(problem, result, Device::cuda);
      check_cuda(cudaEventRecord(stop, nullptr), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      seconds.push_back(static_cast<double>(ms) * 1e-3);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return seconds;
}

template std::vector<double> time_on_gpu<float>(const BackwardSolver&,
                                                const BackwardProblem<float>&, int);
template std::vector<double> time_on_gpu<double>(const BackwardSolver&,
                                                 const BackwardProblem<double>&, int);

}  // namespace sinkgrad::study
#endif
