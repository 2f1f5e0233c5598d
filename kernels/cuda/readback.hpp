#pragma once
// A word of device memory with a pinned host twin, for a small result that a kernel leaves on
// the device (a count, a key) and a synchronous call reads back. Words are kept in a pool per
// device and reused, so that such a call neither allocates nor frees (cudaFree waits for the
// device) and waits only once: the copy is queued behind the kernels, then the caller waits.
// For host code without CUDA headers; available only in builds with CUDA.

namespace sinkgrad::cuda {

namespace detail {
struct ReadbackSlot;  // a pooled word and its twin (readback.cpp)
}

class ReadbackWord {
 public:
  // A free word of the current device (allocated the first time the pool has none; throws
  // Error when that fails).
  ReadbackWord();
  ~ReadbackWord();
  ReadbackWord(const ReadbackWord&) = delete;
  ReadbackWord& operator=(const ReadbackWord&) = delete;

  unsigned long long* device() const;
  // Sets every byte of the device word to `byte` on `stream` (a cudaStream_t; null: the legacy
  // default stream).
  void fill(int byte, void* stream) const;
  // Queues the copy of the device word into its host twin on `stream`. A failure to queue is
  // kept for value(), so that the caller's wait, in between, reports an earlier kernel's error
  // under its own message first.
  void queue_read(void* stream);
  // The word as copied, once the caller has waited for the stream; throws the queue's error.
  unsigned long long value() const;

 private:
  detail::ReadbackSlot* word_;
  int queued_ = 0;  // the cudaError_t of queue_read
};

}  // namespace sinkgrad::cuda
