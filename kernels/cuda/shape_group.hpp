#pragma once
// The team kernels' shapes (team_shape.cuh) in groups by n. A heavy team launch is compiled as
// one unit per group and precision (cmake/instantiations.cmake, GROUPS), so that no unit holds
// every shape's kernels: the units compile in parallel, and each takes a fraction of the time.
// Host code: the launch in a group is chosen here, at run time, from n.

#include <type_traits>

namespace sinkgrad::cuda {

// up_to_64 and above_64 for the kernels that run 32 < n <= 64 two rows a lane, above_32 for
// those that leave it to the block team (MidMatrices).
enum class ShapeGroup { up_to_4, up_to_8, up_to_16, up_to_32, up_to_64, above_64, above_32 };

// How a team kernel runs 32 < n <= 64: a warp with two rows a lane (TeamShape<32, 2>), or the
// block team (BlockShape), whose rows live in global scratch. unrolled takes the block team:
// its replay's three rows of up to 2 x 64 entries a lane are more than a lane's 255 registers,
// and its 32 x 2 kernels were the largest part of the CUDA compile.
enum class MidMatrices { two_rows_a_lane, block_team };

// The group of n's shape: the one whose team_shape.cuh launch takes n.
constexpr ShapeGroup shape_group(int n, MidMatrices mid = MidMatrices::two_rows_a_lane) {
  return n <= 4                           ? ShapeGroup::up_to_4
         : n <= 8                         ? ShapeGroup::up_to_8
         : n <= 16                        ? ShapeGroup::up_to_16
         : n <= 32                        ? ShapeGroup::up_to_32
         : mid == MidMatrices::block_team ? ShapeGroup::above_32
         : n <= 64                        ? ShapeGroup::up_to_64
                                          : ShapeGroup::above_64;
}

// Calls f(std::integral_constant<ShapeGroup, shape_group(n, mid)>{}).
template <MidMatrices mid = MidMatrices::two_rows_a_lane, class F>
void with_shape_group(int n, F&& f) {
  switch (shape_group(n, mid)) {
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
    case ShapeGroup::above_32:
      return f(std::integral_constant<ShapeGroup, ShapeGroup::above_32>{});
  }
}

}  // namespace sinkgrad::cuda
