#pragma once
// Which matrices `auto` trusts with cg_corrected's implicit gradient (solvers/auto), as the
// per-matrix solve (cg_corrected_math.hpp) and the drivers of both devices take it.

#include "core/host_device.hpp"

namespace sinkgrad::math {

// Which matrices `auto` leaves to the exact fallback instead of trusting their corrected
// implicit gradient (status fallback, the gradient NaN until the fallback writes it):
// - those whose marginals are farther from one than max_violation (max |r_i - 1|, |c_j - 1|),
//   not solved;
// - those whose implicit gradient is smaller than gradient_floor x violation x ||R ⊙ G||
//   (Frobenius norms): the implicit formulas hold the marginals fixed, so where G lies along the
//   side the forward left inexact (mHC's copied streams) the implicit gradient vanishes while
//   the T-step forward's is of the order of the marginals' derivative, which the violation does
//   not bound (docs/math.md, `auto`).
// The defaults trust every matrix (cg_corrected).
template <class Real>
struct ImplicitTrust {
  Real max_violation = infinity<Real>();
  Real gradient_floor = 0;
};

// auto's defaults: max_violation keeps the corrected formula's error near the violation for G in
// general position (docs/math.md); gradient_floor sends copied streams to the fallback while
// random G keeps every ok matrix (float64, n = 2..8, T = 2..20, N(0, 1) and 3 N(0, 1) logits).
inline constexpr double auto_max_violation = 1e-5;
inline constexpr double auto_gradient_floor = 1e4;

}  // namespace sinkgrad::math
