#include "backend/cuda/device_memory.hpp"

#include <cuda_runtime_api.h>

#include "backend/cuda/check.hpp"

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
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(std::string("no CUDA device: ") + cudaGetErrorString(code) +
                " (use --device cpu, or run on a machine with an NVIDIA GPU and driver)");
  }
  if (count == 0) throw Error("no CUDA device: the CUDA runtime reports none");
}

void synchronize(const std::string& what) {
  const cudaError_t code = cudaDeviceSynchronize();
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("CUDA error while running " + what + ": " + cudaGetErrorName(code) + ": " +
                cudaGetErrorString(code));
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t code = cudaMalloc(&data_, bytes);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    data_ = nullptr;
    throw Error("cannot allocate " + std::to_string(bytes) +
                " bytes of CUDA device memory: " + cudaGetErrorString(code));
  }
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
