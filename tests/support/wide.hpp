#pragma once
// The extended precision of the test references: long double (x86: 64-bit mantissa), so that a
// reference is more accurate than the float64 code it checks.

#include <cstddef>
#include <vector>

namespace sinkgrad::testing {

using Wide = long double;

// One n x n matrix, row-major.
using Square = std::vector<Wide>;

template <class Real>
Square widen(const Real* x, int n) {
  return Square(x, x + static_cast<std::ptrdiff_t>(n) * n);
}

}  // namespace sinkgrad::testing
