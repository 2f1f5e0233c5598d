#pragma once
// The upper bounds of every size and count a caller gives sinkgrad (command line, definition,
// C ABI, library), in one place so that docs/cli.md and sinkgrad_c.h can name them. Each bound
// keeps one call finite in time and memory, and keeps the arithmetic on it inside its type:
// a value is checked in the type it is used in, never after a narrowing cast (a max_iterations
// of 2^32 + 1 once became 1).

#include <cstdint>
#include <limits>
#include <string>

#include "core/types.hpp"

namespace sinkgrad::limits {

// Forward iterations T (a T of 10^6 already takes minutes per batch).
inline constexpr int max_forward_iterations = 1000000;
// Default upper bound of an integer solver option (OptionSpec::integer): CG's max_iterations
// and a plugin's counts, comparable to T's.
inline constexpr long long max_option_integer = 1000000;
// Largest matrix size n: one float64 matrix is then 8 GiB, and n * n fits an int.
inline constexpr int max_matrix_n = 32768;
// Largest batch, in elements B n^2: 2^56 elements of 8 bytes leave headroom in 64-bit byte
// counts of several such arrays.
inline constexpr std::int64_t max_batch_elements = std::int64_t(1) << 56;
// CPU threads: libgomp gives every thread a stack, and tens of thousands of them overflow
// (SIGSEGV inside libgomp, before any sinkgrad code runs).
inline constexpr int max_threads = 1024;
// Real-valued options, eps and scales: finite in float32, so that no conversion to the
// solve's precision turns them into infinity.
inline constexpr double max_real = std::numeric_limits<float>::max();

// Throws Error naming `what` unless 1 <= T <= max_forward_iterations.
void check_forward_iterations(std::int64_t T, const std::string& what = "T");
// Throws Error unless 1 <= n <= max_matrix_n, batch >= 0 and batch n^2 <= max_batch_elements.
void check_batch_shape(std::int64_t batch, std::int64_t n);
// The threads an OpenMP region of this process would start (OMP_NUM_THREADS, omp_set_num_threads);
// throws Error naming OMP_NUM_THREADS when above max_threads. Starts no thread.
void check_thread_count();

}  // namespace sinkgrad::limits
