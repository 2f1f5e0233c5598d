#include "kernels/cuda/readback.hpp"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/check.hpp"

namespace sinkgrad::cuda {

namespace detail {

struct ReadbackSlot {
  int device = 0;
  void* on_device = nullptr;
  void* on_host = nullptr;  // pinned, so that the copy is queued, not waited for
};

}  // namespace detail

namespace {

using detail::ReadbackSlot;

struct Pool {
  std::mutex mutex;
  std::vector<ReadbackSlot*> free;
};

Pool& pool() {
  static auto* kept = new Pool;  // never destroyed: its words live until exit
  return *kept;
}

void check_allocation(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return;
  (void)cudaGetLastError();
  throw Error("cannot allocate " + std::to_string(sizeof(unsigned long long)) + " bytes of " +
              what + ": " + cudaGetErrorString(code));
}

}  // namespace

ReadbackWord::ReadbackWord() {
  int device = 0;
  SINKGRAD_CUDA_CHECK(cudaGetDevice(&device));
  Pool& kept = pool();
  {
    const std::lock_guard lock(kept.mutex);
    for (auto it = kept.free.begin(); it != kept.free.end(); ++it)
      if ((*it)->device == device) {
        word_ = *it;
        kept.free.erase(it);
        return;
      }
  }
  auto* word = new ReadbackSlot{device};
  const cudaError_t on_device = cudaMalloc(&word->on_device, sizeof(unsigned long long));
  const cudaError_t on_host =
      on_device == cudaSuccess
          ? cudaHostAlloc(&word->on_host, sizeof(unsigned long long), cudaHostAllocPortable)
          : cudaSuccess;
  if (on_device != cudaSuccess || on_host != cudaSuccess) {
    if (word->on_device != nullptr) (void)cudaFree(word->on_device);
    delete word;
    check_allocation(on_device, "CUDA device memory");
    check_allocation(on_host, "pinned host memory");
  }
  word_ = word;
}

ReadbackWord::~ReadbackWord() {
  Pool& kept = pool();
  try {
    const std::lock_guard lock(kept.mutex);
    kept.free.push_back(word_);
  } catch (...) {  // no memory to keep it: the word is lost, not the call
  }
}

unsigned long long* ReadbackWord::device() const {
  return static_cast<unsigned long long*>(word_->on_device);
}

void ReadbackWord::fill(int byte, void* stream) const {
  SINKGRAD_CUDA_CHECK(cudaMemsetAsync(word_->on_device, byte, sizeof(unsigned long long),
                                      static_cast<cudaStream_t>(stream)));
}

void ReadbackWord::queue_read(void* stream) {
  queued_ = cudaMemcpyAsync(word_->on_host, word_->on_device, sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream));
}

unsigned long long ReadbackWord::value() const {
  check(static_cast<cudaError_t>(queued_), "cudaMemcpyAsync of a word read back", __FILE__,
        __LINE__);
  return *static_cast<const unsigned long long*>(word_->on_host);
}

}  // namespace sinkgrad::cuda
