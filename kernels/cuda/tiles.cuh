#pragma once
// Shared-memory tiles of the team kernels: a matrix per team, rows padded to n + 1 so that
// lanes reading a row or a column hit distinct banks (for W = 1, tiles of an odd number of
// words, so that the threads reading the same entry of their own matrices do); the rows and
// columns a lane keeps in registers; the Matrices view the team-form solvers read; and the
// shared-memory layout of a block.

#include <cstddef>

#include "kernels/cuda/team.cuh"

namespace sinkgrad::cuda {

// A matrix in a shared-memory tile, rows padded to `stride` Reals.
template <class Real>
struct Tile {
  Real* data;
  int stride;
  __device__ math::StridedView<Real> row(int i) const { return {data + i * stride, 1}; }
  __device__ math::StridedView<Real> col(int j) const { return {data + j, stride}; }
};

// The rows and columns a lane owns (i = lane + W k, k < K) of a tile, in registers. A
// one-thread team (W = 1) holds every row and reads the columns out of them.
template <class Real, class Shape>
struct RowsAndColumns {
  static constexpr bool columns_from_rows = Shape::W == 1;
  using Rows = typename CudaTeam<Real, Shape>::Rows;
  Rows row;
  Rows col;  // unused when columns_from_rows
  __device__ RowsAndColumns(Tile<Real> tile, int lane, int n) {
#pragma unroll
    for (int k = 0; k < Shape::K; ++k) {
      const int i = lane + Shape::W * k;
#pragma unroll
      for (int j = 0; j < Shape::cap; ++j) {
        row.v[k][j] = i < n && j < n ? tile.data[i * tile.stride + j] : Real(0);
        if constexpr (!columns_from_rows)
          col.v[k][j] = i < n && j < n ? tile.data[j * tile.stride + i] : Real(0);
      }
    }
  }
  __device__ const Real (&operator[](math::Slot s) const)[Shape::cap] {
    return row[s];
  }
  __device__ decltype(auto) column(math::Slot s) const {
    if constexpr (columns_from_rows)
      return math::ColumnOfRows<Rows>{row, s.k};
    else
      return col[s];
  }
};

// The Matrices of the implicit solvers on the GPU: R (first tile), G and the gradient (second
// tile, overwritten in place row by row at the end). K = 1 or W = 1: R's rows and columns in
// registers (not for the block team: its tiles are in global memory, its lanes' rows too).
template <class Real, class Shape,
          bool in_registers = !Shape::block && (Shape::K == 1 || Shape::W == 1)>
struct TileMatrices {
  Tile<Real> R_tile, G_tile;
  __device__ TileMatrices(Tile<Real> r, Tile<Real> g, int, int) : R_tile(r), G_tile(g) {}
  __device__ math::StridedView<Real> R_row(math::Slot s) const { return R_tile.row(s.i); }
  __device__ math::StridedView<Real> R_col(math::Slot s) const { return R_tile.col(s.i); }
  __device__ math::StridedView<Real> G_row(math::Slot s) const { return G_tile.row(s.i); }
  __device__ math::StridedView<Real> G_col(math::Slot s) const { return G_tile.col(s.i); }
  __device__ math::StridedView<Real> grad_row(math::Slot s) const { return G_tile.row(s.i); }
  __device__ math::StridedView<Real> grad_col(math::Slot s) const { return G_tile.col(s.i); }
};

template <class Real, class Shape>
struct TileMatrices<Real, Shape, true> {
  RowsAndColumns<Real, Shape> R;
  Tile<Real> G_tile;
  __device__ TileMatrices(Tile<Real> r, Tile<Real> g, int lane, int n) : R(r, lane, n), G_tile(g) {}
  __device__ const Real (&R_row(math::Slot s) const)[Shape::cap] { return R[s]; }
  __device__ decltype(auto) R_col(math::Slot s) const { return R.column(s); }
  __device__ math::StridedView<Real> G_row(math::Slot s) const { return G_tile.row(s.i); }
  __device__ math::StridedView<Real> G_col(math::Slot s) const { return G_tile.col(s.i); }
  __device__ math::StridedView<Real> grad_row(math::Slot s) const { return G_tile.row(s.i); }
  __device__ math::StridedView<Real> grad_col(math::Slot s) const { return G_tile.col(s.i); }
};

namespace detail {

// Shared memory of a block's teams, in Reals: the exchange buffers of as many teams as a block
// holds (none for W = 1; TeamExchange), then per team its storage and its tiles, two,
// or one when there is a single input that the output overwrites in place (see the top of this
// file for the padding; team storage: team_storage_reals).
template <class Shape>
struct TeamLayout {
  int n;
  int stride;
  int tile_reals;
  int tiles;  // also the number of inputs
  int storage_reals;
  bool staged;  // with staging for the next slice's inputs
  __host__ __device__ TeamLayout(int n, int storage, bool two_inputs, bool staged)
      : n(n),
        stride(Shape::W == 1 ? n : n + 1),
        tile_reals(Shape::W == 1 ? (n * n) | 1 : n * (n + 1)),
        tiles(two_inputs ? 2 : 1),
        storage_reals(storage),
        staged(staged) {}
  // The tiles of `teams` teams, rounded up to whole 16-byte words.
  __host__ __device__ std::size_t tiles_total(int teams) const {
    return (std::size_t(teams) * tiles * tile_reals + 3) / 4 * 4;
  }
  // The staging of one input: teams matrices, contiguous.
  __host__ __device__ std::size_t staging_reals(int teams) const {
    return (std::size_t(teams) * n * n + 3) / 4 * 4;
  }
  __host__ __device__ std::size_t block_reals(int teams) const {
    return std::size_t(TeamExchange<Shape>::reals(teams)) +
           std::size_t(teams) * std::size_t(storage_reals) + tiles_total(teams) +
           (staged ? std::size_t(tiles) * staging_reals(teams) : 0);
  }
};

}  // namespace detail
}  // namespace sinkgrad::cuda
