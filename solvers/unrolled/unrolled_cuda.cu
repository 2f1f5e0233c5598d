// CUDA batch driver of `unrolled`: for n <= 64 the team form of
// solvers/unrolled/unrolled_team.hpp (one team of lanes per matrix, the replay's tape in
// shared memory, backend/cuda/launch.cuh); above that the log-domain replay of
// solvers/unrolled/unrolled_math.hpp, one thread per matrix with its potentials in shared
// memory and the adjoint W in the gradient buffer itself. rows_first without eps runs the team
// form on the transposed tiles; the forwards with eps and tilekernels the team form of
// solvers/unrolled/convention_unrolled_team.hpp (transposed for rows_first and tilekernels),
// above n = 64 the log-domain replay of solvers/unrolled/convention_unrolled.hpp, one thread per
// matrix.

#include <string>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/per_matrix_launch.cuh"
#include "solvers/unrolled/convention_unrolled.hpp"
#include "solvers/unrolled/convention_unrolled_team.hpp"
#include "solvers/unrolled/unrolled_cuda.hpp"
#include "solvers/unrolled/unrolled_math.hpp"
#include "solvers/unrolled/unrolled_team.hpp"

namespace sinkgrad::cuda {
namespace {

// The logits in the first tile (TileMatrices' R accessors, from shared memory: they are read
// once, for P); G, overwritten by the gradient, in the second.
template <class Real, class Shape>
struct UnrolledTileMatrices : TileMatrices<Real, Shape, false> {
  using TileMatrices<Real, Shape, false>::TileMatrices;
  __device__ math::StridedView<Real> M_row(math::Slot s) const { return this->R_row(s); }
  __device__ math::StridedView<Real> M_col(math::Slot s) const { return this->R_col(s); }
};

template <class Real, class Shape>
struct UnrolledTeam {
  int T;
  int segment;
  __device__ MatrixOutcome operator()(const CudaTeam<Real, Shape>& team, Tile<Real> M, Tile<Real> G,
                                      index_t) const {
    const UnrolledTileMatrices<Real, Shape> mats(M, G, team.lane(), team.n());
    return math::unrolled_team<Real>(team, mats, T, segment);
  }
};

// The forwards with eps and tilekernels (solvers/unrolled/convention_unrolled_team.hpp).
template <class Real, class Shape>
struct ConventionUnrolledTeam {
  int T;
  int segment;
  math::ConventionForward<Real> convention;
  __device__ MatrixOutcome operator()(const CudaTeam<Real, Shape>& team, Tile<Real> M, Tile<Real> G,
                                      index_t) const {
    const UnrolledTileMatrices<Real, Shape> mats(M, G, team.lane(), team.n());
    return math::convention_unrolled_team<Real>(team, mats, T, segment, convention);
  }
};

template <class Real>
struct UnrolledMatrix {
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  int T;
  int segment;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::unrolled_backward_matrix(problem.logits.matrix(b), problem.grad_output.matrix(b),
                                          result.grad_logits.matrix(b), n, T, segment, work);
  }
};

// Every convention but the default: the log-domain replay, one thread per matrix, all 2n(T + 1)
// potentials kept (no checkpoints).
template <class Real>
struct ConventionUnrolledMatrix {
  math::ConventionForward<Real> convention;
  BackwardProblem<Real> problem;
  BackwardResult<Real> result;
  int n;
  int T;
  __device__ MatrixOutcome operator()(index_t b, Real* work, Real* /*history*/) const {
    return math::convention_unrolled_matrix(convention, problem.logits.matrix(b),
                                            problem.grad_output.matrix(b),
                                            result.grad_logits.matrix(b), n, T, work);
  }
};

// Tape of the team form: 48 Reals per lane (T <= 23 keeps every step for one row per lane);
// a longer T is checkpointed into as much, or into the least a checkpointed tape needs.
constexpr long long tape_reals_per_lane = 48;

// Shared memory per matrix of the one-thread form aimed at: 512 matrices resident per
// multiprocessor (228 KB) keep enough threads in flight; a longer T is checkpointed into that,
// and only when even the smallest checkpointed workspace does not fit does a matrix get more
// (fewer per block).
constexpr long long target_bytes_per_matrix = 448;

[[noreturn]] void too_long(int n, int T) {
  throw Error("unrolled on cuda: n = " + std::to_string(n) + ", T = " + std::to_string(T) +
              " needs more on-chip memory for the checkpointed replay than a CUDA block has; "
              "use --device cpu or a smaller T");
}

template <class Real>
void unrolled_per_thread(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  long long capacity = target_bytes_per_matrix / static_cast<long long>(sizeof(Real));
  int segment = math::unrolled_segment_length(n, T, capacity);
  for (int threads = detail::max_threads_per_block; segment == 0 && threads >= 1; threads /= 2) {
    capacity = static_cast<long long>(max_workspace_reals<Real>(threads));
    segment = math::unrolled_segment_length(n, T, capacity);
  }
  if (segment == 0) too_long(n, T);
  const auto workspace = static_cast<std::size_t>(math::unrolled_workspace(n, T, segment));
  launch_per_matrix<Real>(result, problem.grad_output.batch, workspace,
                          UnrolledMatrix<Real>{problem, result, n, T, segment}, stream_of(problem));
}

// The team form for n <= 64; orientation transposed replays the forward of M^T with G^T and
// stores the gradient transposed back (rows_first, tilekernels); seeds: the seeds' forward (or
// rows_first without eps), else a convention's (two-sided tape).
template <class Real, TileOrientation orientation>
void unrolled_teams(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result,
                    bool seeds) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  with_team_shape<SmallMatrices::four_lanes>(n, [&](auto shape) {
    using Shape = decltype(shape);
    const int stride = Shape::cap;
    const bool two_sided = !seeds;
    // The longest segment within the budget, else the one with the smallest tape.
    int segment =
        math::unrolled_segment_length(stride, T, tape_reals_per_lane * Shape::W, two_sided);
    const auto tape_of = [&](int L) { return math::unrolled_workspace(stride, T, L, two_sided); };
    if (segment == 0) {
      segment = 1;
      for (int L = 2; L <= T; ++L)
        if (tape_of(L) < tape_of(segment)) segment = L;
    }
    const long long tape = tape_of(segment);
    if (tape * static_cast<long long>(sizeof(Real)) > 200 * 1024) too_long(n, T);
    const auto launch = [&](auto per_team) {
      launch_teams<Real, Shape, orientation>(
          problem.logits.data, problem.grad_output.data, result.grad_logits.data, result.status,
          result.iterations, problem.grad_output.batch, n, per_team, Staging::on,
          static_cast<int>(tape), stream_of(problem));
    };
    if (seeds) return launch(UnrolledTeam<Real, Shape>{T, segment});
    launch(ConventionUnrolledTeam<Real, Shape>{T, segment,
                                               math::convention_forward<Real>(problem.forward)});
  });
}

}  // namespace

template <class Real>
void unrolled(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) {
  const int n = problem.grad_output.n;
  const int T = problem.forward_iterations;
  if (n <= math::max_team_n) {
    const bool seeds =
        is_default_forward(problem.forward) || is_transposed_default_forward(problem.forward);
    return with_orientation(
        last_step_normalises_columns(problem.forward.convention), [&](auto orientation) {
          unrolled_teams<Real, decltype(orientation)::value>(problem, result, seeds);
        });
  }
  if (!is_default_forward(problem.forward)) {
    const auto workspace = math::convention_unrolled_workspace(n, T);
    if (workspace > static_cast<long long>(max_workspace_reals<Real>(1))) too_long(n, T);
    return launch_per_matrix<Real>(
        result, problem.grad_output.batch, static_cast<std::size_t>(workspace),
        ConventionUnrolledMatrix<Real>{math::convention_forward<Real>(problem.forward), problem,
                                       result, n, T},
        stream_of(problem));
  }
  unrolled_per_thread(problem, result);
}

template void unrolled(const BackwardProblem<float>&, const BackwardResult<float>&);
template void unrolled(const BackwardProblem<double>&, const BackwardResult<double>&);

}  // namespace sinkgrad::cuda
