// The CPU's corrected `direct` solves a batch of n = 4, 8 W matrices at a time, one per SIMD lane
// (solvers/direct/direct_lanes.hpp), and a matrix alone with the scalar team: the same
// operations, so the same bits and statuses, whatever its neighbours, in the batch's last
// incomplete group too.

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "core/solver_registry.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

// Matrices that take every branch of the solve: near-singular ones (two copied streams: R with
// two equal columns or rows, or with a zero block, so that a pivot or the condition estimate
// may fail), saturated ones (a spread that underflows entries of R to 0), non-finite or
// negative entries, a zero row, and a G so large that the gradient overflows.
template <class Real>
void spoil(HostBatch<Real>& R, HostBatch<Real>& G, std::mt19937_64& rng) {
  const int n = R.n();
  const Real nan = std::numeric_limits<Real>::quiet_NaN();
  std::uniform_int_distribution<int> pick(0, 11);
  for (index_t b = 0; b < R.batch(); ++b) {
    switch (pick(rng)) {
      case 0:
        for (int i = 0; i < n; ++i) R(b, i, n - 1) = R(b, i, 0);
        break;
      case 1:
        for (int j = 0; j < n; ++j) R(b, 1 % n, j) = R(b, 0, j);
        break;
      case 2:  // two blocks: S + 11^T/n singular
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            if ((2 * i < n) != (2 * j < n)) R(b, i, j) = 0;
        break;
      case 3:
        R(b, n / 2, n - 1) = nan;
        break;
      case 4:
        G(b, n - 1, 0) = std::numeric_limits<Real>::infinity();
        break;
      case 5:
        R(b, 0, n / 2) = Real(-0.25);
        break;
      case 6:
        for (int j = 0; j < n; ++j) R(b, n - 1, j) = 0;
        break;
      case 7:
        for (int j = 0; j < n; ++j)
          G(b, 0, j) = (j % 2 == 0 ? Real(1) : Real(-1)) * std::numeric_limits<Real>::max();
        break;
      case 8:  // saturated: R nearly a permutation, most entries tiny or zero
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            R(b, i, j) = i == j ? Real(1) : R(b, i, j) * std::numeric_limits<Real>::min();
        break;
      default:
        break;
    }
  }
}

template <class Real>
void expect_lanes_equal_one_matrix_at_a_time() {
  auto rng = make_rng(4049 + sizeof(Real));
  std::set<SolveStatus> seen;
  for (const char* project : {"true", "false"})
    for (const auto& spec : {ForwardSpec{}, ForwardSpec{ForwardConvention::rows_first, 0}}) {
      const auto solver = SolverRegistry::global().create("direct", {{"project", project}});
      for (int n = 2; n <= 16; ++n)
        for (const index_t B : {index_t(3), index_t(67)})
          for (double scale : {1.0, 12.0}) {
            const auto M = normal_batch<Real>(rng, B, n, scale);
            auto R = forward(M, 20);
            auto G = normal_batch<Real>(rng, B, n);
            spoil(R, G, rng);
            const auto batch = solve(*solver, M, R, G, 20, false, spec);
            for (index_t b = 0; b < B; ++b) {
              SCOPED_TRACE(std::string("project ") + project + ", n " + std::to_string(n) + ", B " +
                           std::to_string(B) + ", scale " + std::to_string(scale) + ", matrix " +
                           std::to_string(b));
              const auto alone =
                  solve(*solver, single(M, b), single(R, b), single(G, b), 20, false, spec);
              ASSERT_EQ(batch.status[b], alone.status[0]);
              seen.insert(batch.status[b]);
              EXPECT_EQ(batch.iterations[b], alone.iterations[0]);
              const index_t nn = index_t(n) * n;
              ASSERT_TRUE(same_bits(batch.grad.data() + b * nn, alone.grad.data(), int(nn)));
            }
          }
    }
  EXPECT_EQ(seen, (std::set<SolveStatus>{SolveStatus::ok, SolveStatus::invalid_input,
                                         SolveStatus::breakdown}));
}

TEST(DirectLanes, EqualOneMatrixAtATimeFloat) {
  expect_lanes_equal_one_matrix_at_a_time<float>();
}
TEST(DirectLanes, EqualOneMatrixAtATimeDouble) {
  expect_lanes_equal_one_matrix_at_a_time<double>();
}

}  // namespace
}  // namespace sinkgrad::testing
