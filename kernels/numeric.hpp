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

// x > 0: the test of a value that may stand for several (kernels/lanes.hpp: in any lane).
template <class Real>
SINKGRAD_HD bool any_positive(Real x) {
  return x > Real(0);
}

// bound = x where x > bound (kernels/lanes.hpp: lane by lane). A branch on x by reference, not
// max_of's select: this form leaves the GPU's code of its callers as it was before it existed.
template <class Real>
SINKGRAD_HD void raise_to(Real& bound, const Real& x) {
  if (x > bound) bound = x;
}

template <class Real>
SINKGRAD_HD void fill(Real* x, int count, Real value) {
  for (int k = 0; k < count; ++k) x[k] = value;
}

}  // namespace sinkgrad::math
