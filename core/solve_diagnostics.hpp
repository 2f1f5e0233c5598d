#pragma once
// The solver-independent part of SolveDiagnostics (core/backward_problem.hpp): one matrix's
// marginal violations and zero count, written once for the host pass (BackwardSolver's checked
// solve, core/backward_solver.cpp) and the CUDA kernel (kernels/cuda/diagnostics.cu), which
// therefore give the same bits.

#include <cstdint>

#include "core/backward_problem.hpp"
#include "core/host_device.hpp"
#include "core/types.hpp"

namespace sinkgrad {

// max(a, d) that keeps a NaN once one is seen, so that a non-finite R shows as NaN.
SINKGRAD_HD double nan_max(double a, double d) {
  return (d > a || d != d) ? d : a;
}

// Writes matrix b's wanted diagnostics from R (n x n, row-major) and NaN into its
// relative_residual, which the CG drivers overwrite. The sums run in float64 and in index
// order: the violation then measures R, not the rounding of a float32 sum (n 2^-24), and both
// devices add the same numbers in the same order (no products, so nothing to contract).
template <class Real>
SINKGRAD_HD void store_matrix_diagnostics(const SolveDiagnostics<Real>& d, index_t b, const Real* R,
                                          int n) {
  if (d.relative_residual != nullptr) d.relative_residual[b] = math::quiet_nan<Real>();
  if (d.row_violation != nullptr || d.zero_entries != nullptr) {
    double worst = 0;
    index_t zeros = 0;
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        const Real v = R[index_t(i) * n + j];
        sum += double(v);
        zeros += v == Real(0) ? 1 : 0;
      }
      worst = nan_max(worst, math::abs_of(sum - 1.0));
    }
    if (d.row_violation != nullptr) d.row_violation[b] = Real(worst);
    // n^2 above 2^31 - 1 entries (n > 46340) saturates the count.
    if (d.zero_entries != nullptr)
      d.zero_entries[b] = static_cast<std::int32_t>(zeros < 2147483647 ? zeros : 2147483647);
  }
  if (d.column_violation != nullptr) {
    double worst = 0;
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += double(R[index_t(i) * n + j]);
      worst = nan_max(worst, math::abs_of(sum - 1.0));
    }
    d.column_violation[b] = Real(worst);
  }
}

}  // namespace sinkgrad
