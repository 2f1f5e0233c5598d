#pragma once
// The 16-byte word that one vector load or store moves: four floats or two doubles.

#include <vector_types.h>

#include <type_traits>

namespace sinkgrad::cuda {

template <class Real>
using Vec16 = std::conditional_t<sizeof(Real) == 4, float4, double2>;
static_assert(sizeof(Vec16<float>) == 16 && sizeof(Vec16<double>) == 16);

// The Reals in one Vec16.
template <class Real>
inline constexpr int reals_per_vec16 = 16 / sizeof(Real);

}  // namespace sinkgrad::cuda
