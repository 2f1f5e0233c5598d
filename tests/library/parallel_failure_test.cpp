// An exception inside an OpenMP region of the CPU batch loops (a workspace that cannot be
// allocated, a throwing step) is rethrown after the region instead of calling std::terminate
// (kernels/cpu/parallel_failure.hpp); the first one thrown is the one the caller sees.

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/batch_loop.hpp"
#include "kernels/cpu/team_loop.hpp"

namespace sinkgrad::testing {
namespace {

struct Outputs {
  explicit Outputs(index_t batch) : status(batch), iterations(batch), result{} {
    result.status = status.data();
    result.iterations = iterations.data();
  }
  std::vector<SolveStatus> status;
  std::vector<std::int32_t> iterations;
  BackwardResult<double> result;
};

TEST(ParallelFailure, AStepThatThrowsIsRethrownAfterTheRegion) {
  omp_set_num_threads(2);
  Outputs out(64);
  EXPECT_THROW(solve_each_matrix_on_cpu(out.result, 64, 4,
                                        [](index_t b, double*, double*) -> MatrixOutcome {
                                          if (b == 40) throw std::runtime_error("matrix 40");
                                          return {SolveStatus::ok, 1, 0.0};
                                        }),
               std::runtime_error);
}

// A workspace that cannot be allocated: thrown by hand, since a real one would be refused by
// AddressSanitizer's allocator before it could throw.
TEST(ParallelFailure, AWorkspaceThatCannotBeAllocatedIsAnErrorNotTerminate) {
  omp_set_num_threads(2);
  EXPECT_THROW(
      each_in_lane_groups<4>(
          8, true, []() -> std::vector<double> { throw std::bad_alloc(); },
          [](index_t, std::vector<double>&) { return 0u; }, [](index_t, std::vector<double>&) {}),
      std::bad_alloc);
}

}  // namespace
}  // namespace sinkgrad::testing
