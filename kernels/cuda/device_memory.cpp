#include "kernels/cuda/device_memory.hpp"

#include <cuda_runtime_api.h>

#include <atomic>

#include "kernels/cuda/check.hpp"

namespace sinkgrad::cuda {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void require_device() {
  // A device once found stays usable for the process: later calls skip the runtime query.
  static std::atomic<bool> found{false};
  if (found.load(std::memory_order_relaxed)) return;
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(std::string("no CUDA device: ") + cudaGetErrorString(code) +
                " (use --device cpu, or run on a machine with an NVIDIA GPU and driver)");
  }
  if (count == 0) throw Error("no CUDA device: the CUDA runtime reports none");
  found.store(true, std::memory_order_relaxed);
}

void synchronize(const std::string& what) {
  const cudaError_t code = cudaDeviceSynchronize();
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("CUDA error while running " + what + ": " + cudaGetErrorName(code) + ": " +
                cudaGetErrorString(code));
  }
}

namespace {

// Throws Error unless an allocation of `bytes` (`what`) succeeded, clearing the error first.
void check_allocation(cudaError_t code, std::size_t bytes, const char* what) {
  if (code == cudaSuccess) return;
  (void)cudaGetLastError();
  throw Error("cannot allocate " + std::to_string(bytes) + " bytes of " + what + ": " +
              cudaGetErrorString(code));
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  check_allocation(cudaMalloc(&data_, bytes), bytes, "CUDA device memory");
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

StreamBuffer::StreamBuffer(std::size_t bytes, void* stream) : stream_(stream) {
  if (bytes == 0) return;
  check_allocation(cudaMallocAsync(&data_, bytes, static_cast<cudaStream_t>(stream)), bytes,
                   "stream-ordered CUDA device memory");
}

StreamBuffer::~StreamBuffer() {
  if (data_ != nullptr) (void)cudaFreeAsync(data_, static_cast<cudaStream_t>(stream_));
}

void copy_to_device(void* device_destination, const void* host_source, std::size_t bytes) {
  if (bytes == 0) return;
  SINKGRAD_CUDA_CHECK(cudaMemcpy(device_destination, host_source, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  if (bytes == 0) return;
  SINKGRAD_CUDA_CHECK(cudaMemcpy(host_destination, device_source, bytes, cudaMemcpyDeviceToHost));
}

void copy_on_device(void* device_destination, const void* device_source, std::size_t bytes) {
  if (bytes == 0) return;
  SINKGRAD_CUDA_CHECK(
      cudaMemcpy(device_destination, device_source, bytes, cudaMemcpyDeviceToDevice));
}

void fill_bytes(void* device_destination, int byte, std::size_t bytes) {
  if (bytes == 0) return;
  SINKGRAD_CUDA_CHECK(cudaMemset(device_destination, byte, bytes));
}

}  // namespace sinkgrad::cuda
