// tests/benchmarks/arithmetic_floor.hpp: the operation counts of n = 4, T = 20 against numbers
// worked out by hand (or by walking the algorithm's loops here), and the peak-rate model.

#include "tests/benchmarks/arithmetic_floor.hpp"

#include <gtest/gtest.h>

namespace sinkgrad::bench {
namespace {

constexpr int n = 4, T = 20;

void expect_ops(const Ops& ops, double fma, double exp, double rcp) {
  EXPECT_DOUBLE_EQ(ops.fma, fma);
  EXPECT_DOUBLE_EQ(ops.exp, exp);
  EXPECT_DOUBLE_EQ(ops.rcp, rcp);
}

TEST(ArithmeticFloor, ForwardAndUnrolled) {
  // Forward: 20 steps of two 4x4 matrix-vector products (2 x 16 = 32) and 8 reciprocals: 640,
  // 160; the 16 entries of P exponentiated once.
  expect_ops(forward_ops(n, T), 640, 16, 160);
  // Unrolled: per step the replay's 32 + 8 reciprocals, then y, z (2 x 8 = 16), P^T y and P z
  // (32), the two rank-one updates (32): 112 per step, 2240 in 20 steps.
  expect_ops(unrolled_ops(n, T), 2240, 16, 160);
}

TEST(ArithmeticFloor, CgSolvers) {
  // cg_plain schur, 8 iterations: set-up s_r, s_c, b, alpha 16 each (64) and the gradient
  // 48 = 112; r^T r at the start 4; per iteration p - R^T R p (36) and 5 x 4 = 20 vector
  // operations: 8 x 56 = 448. 112 + 4 + 448 = 564, two divisions per iteration: 16.
  expect_ops(cg_plain_schur_ops(n, 8), 564, 0, 16);
  // cg_plain block, 16 iterations on 8 unknowns: set-up 32 + gradient 48 = 80; start 8; per
  // iteration R beta, R^T alpha (32) + 8 adds = 40 and 40 vector operations: 16 x 80 = 1280.
  expect_ops(cg_plain_block_ops(n, 16), 80 + 8 + 1280, 0, 32);
  // cg_corrected, 8 iterations: r, c, s_r, s_c (64), b (16 + 4), alpha (16 + 4), gradient 48:
  // 152 and the 4 reciprocals of r; start 4; per iteration c p - R^T (R p / r) (32 + 8) and 20:
  // 8 x 60 = 480. 152 + 4 + 480 = 636; 4 + 16 = 20 reciprocals.
  expect_ops(cg_corrected_ops(n, 8), 636, 0, 20);
  // Half an iteration on average counts half of one.
  expect_ops(cg_corrected_ops(n, 8.5), 636 + 30, 0, 21);
  // auto with 1% replayed: cg_corrected plus 0.01 of unrolled.
  expect_ops(corrected_then_unrolled_ops(n, T, 8, 0.01), 636 + 22.4, 0.16, 20 + 1.6);
}

TEST(ArithmeticFloor, DirectSolvers) {
  // Cholesky of a 4x4 matrix, right-looking, walked: column j's pivot is reduced by j earlier
  // products, each entry below it by j products and one multiply by the pivot's reciprocal.
  double cholesky = 0;
  for (int j = 0; j < n; ++j) {
    cholesky += j;  // the pivot
    for (int i = j + 1; i < n; ++i) cholesky += j + 1;
  }
  EXPECT_EQ(cholesky, 10 + 6);  // (64 - 4) / 6 multiply-adds + 6 multiplies
  // S's upper triangle: 10 entries of 4 multiply-adds = 40. Three solves with L and L^T
  // (b and two for the estimate), each 2 x (6 + 4) = 20: 60. Set-up as cg_corrected: 152.
  // Reciprocals: 1/r (4), 4 square roots and 4 pivot reciprocals.
  expect_ops(direct_corrected_ops(n), 152 + 40 + cholesky + 60, 0, 12);
  // Plain: set-up 112, S formed 40, the eigendecomposition 4.5 x 64 = 288, V (V^T b / lambda)
  // 32, and 4 reciprocals of the eigenvalues.
  expect_ops(direct_plain_ops(n), 112 + 40 + 288 + 32, 0, 4);
}

TEST(ArithmeticFloor, PeakRates) {
  const LanesPerSm hopper = lanes_per_sm(9, 0);
  EXPECT_EQ(hopper.issue, 128);
  EXPECT_EQ(hopper.fp32, 128);
  EXPECT_EQ(hopper.fp64, 64);
  EXPECT_EQ(hopper.mufu, 16);
  EXPECT_EQ(lanes_per_sm(8, 0).fp32, 64);
  EXPECT_EQ(lanes_per_sm(8, 0).fp64, 32);
  EXPECT_EQ(lanes_per_sm(8, 6).fp64, 2);

  // One SM at 1 GHz: a lane rate of 1e9 per second.
  const Ops forward = forward_ops(n, T);
  // float32 on 9.0: FMA pipe 640 + 16 (exp) + 3 x 160 = 1136, MUFU 16 + 160 = 176, issue 1312:
  // 1312 / 128 = 10.25, 1136 / 128 = 8.875, 176 / 16 = 11 -> 11 ns per matrix, MUFU-bound.
  EXPECT_DOUBLE_EQ(arithmetic_seconds(forward, false, 1, 9, 0, 1, 1e6), 11e-9);
  // On 8.0 the FP32 pipe has 64 lanes: 1136 / 64 = 17.75 ns.
  EXPECT_DOUBLE_EQ(arithmetic_seconds(forward, false, 1, 8, 0, 1, 1e6), 17.75e-9);
  // float64: 640 + 20 x 16 + 8 x 160 = 2240 FP64 instructions; 64 lanes: 35 ns; 2 lanes: 1120.
  EXPECT_DOUBLE_EQ(arithmetic_seconds(forward, true, 1, 9, 0, 1, 1e6), 35e-9);
  EXPECT_DOUBLE_EQ(arithmetic_seconds(forward, true, 1, 8, 6, 1, 1e6), 1120e-9);
  // Linear in matrices, SMs and clock: 1000 matrices on 2 SMs at 2 GHz take 1000 / 4 times.
  EXPECT_DOUBLE_EQ(arithmetic_seconds(forward, false, 1000, 9, 0, 2, 2e6), 11e-9 * 250);
}

}  // namespace
}  // namespace sinkgrad::bench
