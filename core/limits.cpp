#include "core/limits.hpp"

#include <omp.h>

#include <cstdlib>

#include "core/error.hpp"

namespace sinkgrad::limits {

void check_forward_iterations(std::int64_t T, const std::string& what) {
  if (T < 1) throw Error(what + " must be >= 1, got " + std::to_string(T));
  if (T > max_forward_iterations)
    throw Error(what + " must be <= " + std::to_string(max_forward_iterations) +
                " (forward iterations), got " + std::to_string(T));
}

void check_batch_shape(std::int64_t batch, std::int64_t n) {
  if (batch < 0) throw Error("batch must be >= 0, got " + std::to_string(batch));
  if (n < 1) throw Error("n must be >= 1, got " + std::to_string(n));
  if (n > max_matrix_n)
    throw Error("n must be <= " + std::to_string(max_matrix_n) + ", got " + std::to_string(n));
  if (batch > max_batch_elements / (n * n))
    throw Error("a batch of " + std::to_string(batch) + " matrices of " + std::to_string(n) +
                " x " + std::to_string(n) + " is above the " + std::to_string(max_batch_elements) +
                " elements (2^56) sinkgrad addresses");
}

void check_thread_count() {
  // omp_get_max_threads reads the ICV that OMP_NUM_THREADS (or omp_set_num_threads) set; libgomp
  // creates a region's threads when the region starts, so refusing before it comes before the
  // crash.
  const int threads = omp_get_max_threads();
  if (threads <= max_threads) return;
  // Name the variable only when it is what asked (its first entry: "100000,2" nests).
  const char* variable = std::getenv("OMP_NUM_THREADS");
  const std::string source = variable != nullptr && std::atoi(variable) == threads
                                 ? "OMP_NUM_THREADS=" + std::string(variable)
                                 : std::string("the OpenMP thread count (omp_set_num_threads)");
  throw Error(source + " asks for " + std::to_string(threads) + " threads, above the " +
              std::to_string(max_threads) +
              " sinkgrad runs (thousands of threads overflow libgomp's stacks); set it to 1.." +
              std::to_string(max_threads));
}

}  // namespace sinkgrad::limits
