#pragma once
// The arithmetic floor of sinkgrad_bench_cuda's kernels: per matrix, the multiply-adds,
// exponentials and reciprocals (IEEE divisions and square roots counted as reciprocals) that the
// mathematics of docs/math.md needs, and the time they take at the GPU's peak issue rates.
// Pure host code, so that the counts are unit-tested without a GPU
// (tests/library/arithmetic_floor_test.cpp).
//
// The counts are lower bounds by design: index arithmetic, data movement within the chip,
// exchanges between lanes, comparisons, well-posedness checks and the projection are not
// counted; an add or a multiply alone counts as one multiply-add.

#include <algorithm>

namespace sinkgrad::bench {

// Per matrix (means over a batch can be fractional, e.g. the measured CG iterations).
struct Ops {
  double fma = 0;  // multiply-adds (an add or a multiply alone counts as one)
  double exp = 0;  // exponentials
  double rcp = 0;  // exact reciprocals, divisions and square roots
};

inline Ops operator+(Ops a, const Ops& b) {
  return {a.fma + b.fma, a.exp + b.exp, a.rcp + b.rcp};
}
inline Ops operator*(double k, const Ops& a) {
  return {k * a.fma, k * a.exp, k * a.rcp};
}

// Linear-domain forward (T steps): per step b = 1 / (P^T a), a = 1 / (P b): 2 n^2 multiply-adds
// and 2 n reciprocals; P = exp(M - 1 m^T): n^2 exponentials. The O(n^2) column maxima and the
// assembly of R are not counted.
inline Ops forward_ops(int n, int T) {
  const double N = n;
  return {2 * N * N * T, N * N, 2 * N * T};
}

// The carry of dL/d(log B) to M under softmax_rows(M) + eps, per row: the softmax (n
// exponentials, one reciprocal), w = s / (s + eps) (n divisions), w . g and w g - s (w . g)
// (3 n multiply-adds); the row maxima are not counted.
inline Ops carry_ops(int n) {
  const double N = n;
  return {3 * N * N, N * N, N * N + N};
}

// Linear-domain unrolled: the forward replayed (as above), then per step in reverse
// y = -a_bar * a * a and z = -b_bar * b * b (4 n), b_bar += P^T y and a_bar = P z (2 n^2),
// P_bar += y b^T + a z^T (2 n^2): 6 n^2 + 4 n multiply-adds and 2 n reciprocals per step, n^2
// exponentials. The O(n^2) start (P_bar, a_bar, b_bar) and dL/dM = P * P_bar are not counted.
inline Ops unrolled_ops(int n, int T) {
  const double N = n;
  return {(6 * N * N + 4 * N) * T, N * N, 2 * N * T};
}

// The n x n Schur systems' set-up and gradient, shared by CG and direct:
//   plain      s_r, s_c (2 n^2), b = s_c - R^T s_r (n^2), alpha = s_r - R beta (n^2),
//              dL/dM = R * (G - alpha 1^T - 1 beta^T) (3 n^2):                     7 n^2
//   corrected  also r, c (2 n^2); b = s_c - R^T (s_r / r) and alpha = (s_r - R beta) / r:
//              9 n^2 + 2 n multiply-adds and the n reciprocals 1 / r.
inline Ops schur_setup_ops(int n, bool corrected) {
  const double N = n;
  if (!corrected) return {7 * N * N, 0, 0};
  return {9 * N * N + 2 * N, 0, N};
}

// CG on m unknowns for k iterations: the start's r^T r (m), per iteration the operator, p^T A p,
// x, r, r^T r and p (5 m) and two divisions (alpha, beta).
inline Ops cg_ops(double k, int m, double operator_fma) {
  return {m + k * (operator_fma + 5.0 * m), 0, 2 * k};
}

// cg_plain system=schur: (I - R^T R) p = p - R^T (R p): 2 n^2 + n per application.
inline Ops cg_plain_schur_ops(int n, double k) {
  const double N = n;
  return schur_setup_ops(n, false) + cg_ops(k, n, 2 * N * N + N);
}

// cg_plain system=block: [I R; R^T I] on 2 n unknowns (R beta, R^T alpha, two adds of n:
// 2 n^2 + 2 n); b = [s_r; s_c] (2 n^2) and dL/dM from alpha and beta (3 n^2): 5 n^2 set-up.
inline Ops cg_plain_block_ops(int n, double k) {
  const double N = n;
  return Ops{5 * N * N, 0, 0} + cg_ops(k, 2 * n, 2 * N * N + 2 * N);
}

// cg_corrected: (diag(c) - R^T diag(1/r) R) p: 2 n^2 + 2 n per application.
inline Ops cg_corrected_ops(int n, double k) {
  const double N = n;
  return schur_setup_ops(n, true) + cg_ops(k, n, 2 * N * N + 2 * N);
}

// direct system=corrected: S + 11^T/n formed (upper triangle, n multiply-adds per entry:
// n^2 (n + 1) / 2), its Cholesky ((n^3 - n) / 6 multiply-adds, n(n - 1)/2 multiplies by the
// pivot's reciprocal, n square roots and n reciprocals), the solve of b with L and L^T
// (n^2 + n with the stored reciprocals), and the condition estimate counted as two more such
// solves (Higham's estimator takes at least two).
inline Ops direct_corrected_ops(int n) {
  const double N = n;
  const double form = N * N * (N + 1) / 2;
  const double cholesky = (N * N * N - N) / 6 + N * (N - 1) / 2;
  const double solves = 3 * (N * N + N);
  return schur_setup_ops(n, true) + Ops{form + cholesky + solves, 0, 2 * N};
}

// direct system=plain: beta = S^+ b from a symmetric eigendecomposition of S = I - R^T R
// (formed: n^2 (n + 1) / 2), counted at the textbook cost of the symmetric QR algorithm with
// eigenvectors, 9 n^3 flops = 4.5 n^3 multiply-adds (Golub & Van Loan), and S^+ b = V (V^T b /
// lambda): 2 n^2 multiply-adds and n reciprocals.
inline Ops direct_plain_ops(int n) {
  const double N = n;
  const double form = N * N * (N + 1) / 2;
  return schur_setup_ops(n, false) + Ops{form + 4.5 * N * N * N + 2 * N * N, 0, N};
}

// auto / on_failure="unrolled": cg_corrected on every matrix, unrolled's replay on the fraction
// of the batch the CG kernel left to the fallback.
inline Ops corrected_then_unrolled_ops(int n, int T, double k, double replayed_fraction) {
  return cg_corrected_ops(n, k) + replayed_fraction * unrolled_ops(n, T);
}

// Thread-instructions per SM per clock (CUDA C++ Programming Guide, "Arithmetic Instructions"):
// issue: 4 schedulers x 32 lanes; MUFU (ex2, rcp): 16. Capabilities not listed get the
// consumer parts' 128 / 2 (an assumption).
struct LanesPerSm {
  int issue = 128, fp32 = 128, fp64 = 2, mufu = 16;
};
inline LanesPerSm lanes_per_sm(int major, int minor) {
  const int cc = 10 * major + minor;
  if (cc == 70 || cc == 80) return {128, 64, 32, 16};  // V100, A100
  if (cc == 75) return {128, 64, 2, 16};
  if (cc == 90 || cc == 100) return {128, 128, 64, 16};  // H100/H200, B200
  return {128, 128, 2, 16};                              // 8.6, 8.9, 12.x, ...
}

// The instruction sequences each counted operation issues: float32 exp = MUFU ex2 + one FMA
// (the scaling by log2 e); an exact float32 reciprocal or division (-prec-div=true) = MUFU rcp
// + 3 FMA-pipe instructions (Newton step and rounding fix-up; the slow path for denormals is
// not taken); float64 has no MUFU for them: exp ~20 and reciprocal ~8 FP64 instructions.
constexpr double f32_rcp_fma = 3, f64_exp_ops = 20, f64_rcp_ops = 8;

// Seconds for `matrices` matrices of `ops` at the peak rates of an SM count and clock: the
// slowest of the issue slots (every instruction), the FP32 or FP64 pipe and the MUFU pipe, as
// if every pipe were busy all the time and fully overlapped.
inline double arithmetic_seconds(const Ops& ops, bool fp64, double matrices, int major, int minor,
                                 int sms, double clock_khz) {
  const LanesPerSm lanes = lanes_per_sm(major, minor);
  const double per_lane = sms * clock_khz * 1e3;  // per-SM-lane instructions per second
  if (fp64) {  // every counted instruction on the FP64 pipe, never wider than the issue slots
    const double fp64_ops = ops.fma + f64_exp_ops * ops.exp + f64_rcp_ops * ops.rcp;
    return matrices * fp64_ops / (lanes.fp64 * per_lane);
  }
  const double fma_pipe = ops.fma + ops.exp + f32_rcp_fma * ops.rcp;
  const double mufu = ops.exp + ops.rcp;
  return matrices * std::max({(fma_pipe + mufu) / (lanes.issue * per_lane),
                              fma_pipe / (lanes.fp32 * per_lane), mufu / (lanes.mufu * per_lane)});
}

}  // namespace sinkgrad::bench
