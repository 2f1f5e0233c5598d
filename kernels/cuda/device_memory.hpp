#pragma once
// Device memory for host code that does not include CUDA headers (core/, tests, the CLI):
// device presence, plain cudaMalloc allocations (never managed memory), stream-ordered scratch,
// copies, and an owning device batch that hands out BatchViews in MemorySpace::device. Every
// call is checked and throws sinkgrad::Error. Available only in builds with CUDA
// (SINKGRAD_WITH_CUDA).

#include <cstddef>
#include <string>
#include <utility>

#include "core/batch.hpp"

namespace sinkgrad::cuda {

// Number of CUDA devices usable by this process (0 when there is no device or no driver).
int device_count();
// Throws Error("no CUDA device: <reason>") when no device is usable.
void require_device();
// Waits for all work on the device and throws Error naming `what` if any of it failed.
void synchronize(const std::string& what);

// Owns bytes of device memory (cudaMalloc / cudaFree).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Owns bytes of device memory allocated and freed in the order of `stream` (a cudaStream_t;
// cudaMallocAsync / cudaFreeAsync): scratch for work launched on that stream, which neither
// allocation nor release waits for.
class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, void* stream);
  ~StreamBuffer();
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;

  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  void* stream_ = nullptr;
};

void copy_to_device(void* device_destination, const void* host_source, std::size_t bytes);
void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes);
void copy_on_device(void* device_destination, const void* device_source, std::size_t bytes);
void fill_bytes(void* device_destination, int byte, std::size_t bytes);

// Owns device memory for a batch of B n x n matrices; the device twin of HostBatch.
template <class Real>
class DeviceBatch {
 public:
  DeviceBatch() = default;
  DeviceBatch(index_t batch, int n)
      : batch_(batch),
        n_(n),
        buffer_(static_cast<std::size_t>(batch * index_t(n) * n) * sizeof(Real)) {
    if (batch < 0 || n < 1) throw Error("a batch needs B >= 0 and n >= 1");
  }
  explicit DeviceBatch(const HostBatch<Real>& host) : DeviceBatch(host.batch(), host.n()) {
    upload(host);
  }

  BatchView<Real> view() { return {data(), batch_, n_, MemorySpace::device}; }
  BatchView<const Real> view() const { return {data(), batch_, n_, MemorySpace::device}; }
  Real* data() const { return buffer_.as<Real>(); }
  index_t batch() const { return batch_; }
  int n() const { return n_; }
  index_t size() const { return batch_ * index_t(n_) * n_; }
  std::size_t bytes() const { return buffer_.bytes(); }

  void upload(const HostBatch<Real>& host) {
    if (host.batch() != batch_ || host.n() != n_) throw Error("upload: shapes differ");
    copy_to_device(data(), host.data(), bytes());
  }
  HostBatch<Real> download() const {
    HostBatch<Real> host(batch_, n_);
    copy_to_host(host.data(), data(), bytes());
    return host;
  }

 private:
  index_t batch_ = 0;
  int n_ = 0;
  DeviceBuffer buffer_;
};

}  // namespace sinkgrad::cuda
