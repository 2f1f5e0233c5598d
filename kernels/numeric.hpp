#pragma once
// Small per-array helpers of the per-matrix mathematics (host and device).

#include "core/host_device.hpp"

namespace sinkgrad::math {

template <class Real>
SINKGRAD_HD bool all_finite(const Real* x, int count) {
  for (int k = 0; k < count; ++k)
    if (!is_finite(x[k])) return false;
  return true;
}

template <class Real>
SINKGRAD_HD void fill(Real* x, int count, Real value) {
  for (int k = 0; k < count; ++k) x[k] = value;
}

}  // namespace sinkgrad::math
