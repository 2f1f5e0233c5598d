#pragma once
// The team kernels' shapes (team_shape.cuh) in six groups by n. A heavy team launch is compiled
// as one unit per group and precision (cmake/instantiations.cmake, GROUPS), so that no unit
// holds every shape's kernels: the units compile in parallel, and each takes a fraction of the
// time. Host code: the launch in a group is chosen here, at run time, from n.

#include <type_traits>

namespace sinkgrad::cuda {

enum class ShapeGroup { up_to_4, up_to_8, up_to_16, up_to_32, up_to_64, above_64 };

// The group of n's shape: the one whose team_shape.cuh launch takes n.
constexpr ShapeGroup shape_group(int n) {
  return n <= 4    ? ShapeGroup::up_to_4
         : n <= 8  ? ShapeGroup::up_to_8
         : n <= 16 ? ShapeGroup::up_to_16
         : n <= 32 ? ShapeGroup::up_to_32
         : n <= 64 ? ShapeGroup::up_to_64
                   : ShapeGroup::above_64;
}

// Calls f(std::integral_constant<ShapeGroup, shape_group(n)>{}).
template <class F>
void with_shape_group(int n, F&& f) {
  switch (shape_group(n)) {
    case ShapeGroup::up_to_4:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::up_to_4>{});
    case ShapeGroup::up_to_8:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::up_to_8>{});
    case ShapeGroup::up_to_16:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::up_to_16>{});
    case ShapeGroup::up_to_32:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::up_to_32>{});
    case ShapeGroup::up_to_64:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::up_to_64>{});
    case ShapeGroup::above_64:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::above_64>{});
  }
}

}  // namespace sinkgrad::cuda
