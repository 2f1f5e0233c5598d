#pragma once
// The team shape of the team kernels for n (kernels/cuda/launch.cuh): with_team_shape calls a
// launch with the TeamShape (or BlockShape) that n and the kernel's small-matrix layout take.

#include <string>

#include "core/error.hpp"
#include "kernels/cuda/block_team.cuh"
#include "kernels/cuda/shape_group.hpp"
#include "kernels/cuda/team.cuh"
#include "kernels/team.hpp"

namespace sinkgrad::cuda {

// How a kernel lays out the smallest matrices. one_thread: n <= 4 in one thread (the shape
// team_width gives). four_lanes: n <= 4 on four lanes, each owning a row, for the kernels whose
// one-thread form holds too much per thread (the unrolled replay's tape, float64 registers);
// the result is the same up to the order of its sums. one_thread_to_8: n <= 8 in one thread
// too, for kernels that keep little more than the matrix itself in registers (the float32
// forward: 64 entries of P; float32 CG: R), where a team of 8 lanes spends most of its issue
// slots on its exchanges; it sums in the 8-lane team's order (team.cuh).
enum class SmallMatrices { one_thread, four_lanes, one_thread_to_8 };

// Calls launch(TeamShape<W, K, N>{}) with the shape team_width(n) gives, or the one `small`
// asks for; above max_team_n (above 32 for MidMatrices::block_team), launch(BlockShape{}) up
// to max_block_team_n.
template <SmallMatrices small = SmallMatrices::one_thread,
          MidMatrices mid = MidMatrices::two_rows_a_lane, class Launch>
void with_team_shape(int n, Launch&& launch) {
  if constexpr (small == SmallMatrices::one_thread_to_8) {
    if (n > 4 && n <= 8) {
      if (n == 8)
        launch(TeamShape<1, 8, 8>{});
      else
        launch(TeamShape<1, 8>{});
      return;
    }
  }
  if (n <= 4) {
    if constexpr (small == SmallMatrices::four_lanes) {
      if (n == 4)
        launch(TeamShape<4, 1, 4>{});
      else
        launch(TeamShape<4, 1>{});
    } else {
      if (n == 4)
        launch(TeamShape<1, 4, 4>{});
      else
        launch(TeamShape<1, 4>{});
    }
  } else if (n == 8)
    launch(TeamShape<8, 1, 8>{});
  else if (n < 8)
    launch(TeamShape<8, 1>{});
  else if (n == 16)
    launch(TeamShape<16, 1, 16>{});
  else if (n < 16)
    launch(TeamShape<16, 1>{});
  else if (n == 32)
    launch(TeamShape<32, 1, 32>{});
  else if (n < 32)
    launch(TeamShape<32, 1>{});
  else if (mid == MidMatrices::two_rows_a_lane && n <= math::max_team_n) {
    if constexpr (mid == MidMatrices::two_rows_a_lane) launch(TeamShape<32, 2>{});
  } else if (n <= max_block_team_n)
    launch(BlockShape{});
  else
    throw Error("n = " + std::to_string(n) + " is above the " + std::to_string(max_block_team_n) +
                " that the CUDA team kernels support");
}

// The group (shape_group.hpp) whose n take Shape: that of its largest n.
template <class Shape, MidMatrices mid = MidMatrices::two_rows_a_lane>
constexpr ShapeGroup shape_group_of() {
  return shape_group(Shape::cap, mid);
}

// with_team_shape for the n of group G only: a unit that instantiates it compiles launch for
// that group's shapes alone. n must be in G (shape_group(n, mid) == G; with_shape_group<mid>
// chooses).
template <ShapeGroup G, SmallMatrices small = SmallMatrices::one_thread,
          MidMatrices mid = MidMatrices::two_rows_a_lane, class Launch>
void with_team_shape_in(int n, Launch&& launch) {
  with_team_shape<small, mid>(n, [&](auto shape) {
    if constexpr (shape_group_of<decltype(shape), mid>() == G)
      launch(shape);
    else
      throw Error("n = " + std::to_string(n) + " launched in the wrong shape group");
  });
}

}  // namespace sinkgrad::cuda
