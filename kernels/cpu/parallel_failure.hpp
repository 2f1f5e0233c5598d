#pragma once
// No exception may leave an OpenMP region: one that does calls std::terminate (a per-thread
// workspace too large for memory, a bad_alloc from Eigen, an Error from a per-matrix step).
// Each region runs its throwing steps through ParallelFailure::run, which keeps the first
// exception and lets every thread finish the region without further work; the caller rethrows
// it once the region has ended, where the library's usual error paths take it.
//
//   ParallelFailure failure;
//   #pragma omp parallel
//   {
//     std::vector<Real> work;
//     failure.run([&] { work.resize(workspace); });
//     #pragma omp for
//     for (index_t b = 0; b < batch; ++b) failure.run([&] { solve(b, work.data()); });
//   }
//   failure.rethrow();

#include <atomic>
#include <exception>
#include <mutex>

namespace sinkgrad {

class ParallelFailure {
 public:
  // Runs step unless a step (of any thread) has failed; never throws.
  template <class Step>
  void run(Step&& step) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      step();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!first_) first_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }

  // After the region: throws the first exception a step threw, if any.
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::exception_ptr first_;
};

}  // namespace sinkgrad
