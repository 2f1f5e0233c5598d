// The unrolled team kernels of one source tree, timed without building the library: the
// default (UnrolledTeam), eps 1e-6 (columns_first) and TileKernels' (ConventionUnrolledTeam,
// transposed), launched as solvers/unrolled/unrolled_cuda_teams.cuh launches them, at
// n = 4, 8, 16, 32 in float32 and float64 (B = 2^20, 2^19 for float64 n = 32; T = 20;
// normal(0, 1) logits and G). Not a CMake target: scripts/gpu_unrolled_ab.sh compiles it against
// two trees, one nvcc per size (both trees in 136 s on 2 cores; a build of the library takes
// 400-530 s on the GPU machine's 16), and runs them alternately. Compiled with
// -DAB_REAL=float|double -DAB_N=n for a size, or with -DAB_MAIN for main(). Prints "kernel/nN/fP
// median_ms checksum_T checksum_T_check status": the checksums are of the first 65536 gradients and
// statuses at T and at a T whose tape is checkpointed, so that two trees can be compared bit for
// bit.

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#if defined(AB_MAIN)
namespace ab {
#define AB_SIZE(real, n) void run_##real##_##n(long long batch, int reps);
AB_SIZE(float, 4)
AB_SIZE(float, 8)
AB_SIZE(float, 16)
AB_SIZE(float, 32)
AB_SIZE(double, 4)
AB_SIZE(double, 8)
AB_SIZE(double, 16)
AB_SIZE(double, 32)
}  // namespace ab

int main(int argc, char** argv) {
  const long long batch = argc > 1 ? std::atoll(argv[1]) : 1LL << 20;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  ab::run_float_4(batch, reps);
  ab::run_float_8(batch, reps);
  ab::run_float_16(batch, reps);
  ab::run_float_32(batch, reps);
  ab::run_double_4(batch, reps);
  ab::run_double_8(batch, reps);
  ab::run_double_16(batch, reps);
  ab::run_double_32(batch / 2, reps);
  return 0;
}
#else
#include <algorithm>
#include <vector>

#include "forward/convention_forward.hpp"
#include "solvers/unrolled/unrolled_cuda_teams.cuh"

namespace ab {
using namespace sinkgrad;
using namespace sinkgrad::cuda;
using namespace sinkgrad::cuda::unrolled_detail;

// normal(0, 1) by Box-Muller from a counter hash (splitmix64): the data on the GPU at once.
constexpr int fill_threads = 256;
template <class Real>
__global__ void fill_normal(Real* x, long long count, unsigned long long seed) {
  for (long long i = blockIdx.x * 1LL * fill_threads + threadIdx.x; i < count;
       i += gridDim.x * 1LL * fill_threads) {
    unsigned long long z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double u = ((z >> 11) + 0.5) * 0x1.0p-53;
    const double v = ((z & 0x7ff) + 0.5) * 0x1.0p-11;
    x[i] = Real(sqrt(-2.0 * log(u)) * cospi(2.0 * v));
  }
}

// One launch of body's kernel as unrolled_teams() makes it for Shape: a copy of its per-shape
// lines (segment, tape, storage, staging), not a call, so that this file compiles against trees
// from before and after any change to them; keep it in step with unrolled_teams().
template <class Real, class Shape, TileOrientation orientation, class MakeBody>
void launch(const Real* M, const Real* G, Real* out, SolveStatus* status, std::int32_t* iterations,
            long long batch, int T, bool two_sided, MakeBody make_body) {
  const int n = Shape::N;
  const int stride = team_stride<Shape>(n);
  const int segment =
      math::unrolled_segment_or_smallest(stride, T, tape_reals_per_lane * Shape::W, two_sided);
  const long long tape = math::unrolled_workspace(stride, T, segment, two_sided);
  const auto body = make_body(T, segment);
  long long storage = tape;
  if constexpr (requires { body.storage_reals(tape, n, stride); })
    storage = body.storage_reals(tape, n, stride);
  launch_teams<Real, Shape, orientation>(M, G, out, status, iterations, batch, n, body,
                                         decltype(body)::staging, static_cast<int>(storage));
}

inline std::uint64_t checksum(const void* data, std::size_t bytes, std::uint64_t h) {
  for (std::size_t i = 0; i < bytes; ++i)
    h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

template <class Real, int n>
void run(long long batch, int reps) {
  using Shape = TeamShape<n, 1, n>;  // the shapes with_team_shape<four_lanes> gives n = 4..32
  const std::size_t count = std::size_t(batch) * n * n;
  Real *M, *G, *out;
  SolveStatus* status;
  std::int32_t* iterations;
  cudaMalloc(&M, count * sizeof(Real));
  cudaMalloc(&G, count * sizeof(Real));
  cudaMalloc(&out, count * sizeof(Real));
  cudaMalloc(&status, batch * sizeof(SolveStatus));
  cudaMalloc(&iterations, batch * sizeof(std::int32_t));
  const int blocks = 1024;  // of fill_threads
  // clang-format 14 splits these launches' >>> (in this file, whose #if it parses both ways)
  // clang-format off
  fill_normal<<<blocks, fill_threads>>>(M, static_cast<long long>(count), 1);
  fill_normal<<<blocks, fill_threads>>>(G, static_cast<long long>(count), 2);
  // clang-format on
  const auto eps = math::convention_forward<Real>({ForwardConvention::columns_first, 1e-6});
  const auto tilekernels = math::convention_forward<Real>({ForwardConvention::tilekernels, 1e-6});
  const int T_check = n == 32 ? 60 : 90;  // past the tape's capacity: checkpointed
  const auto measure = [&](const char* name, auto run_at) {
    run_at(20);
    cudaDeviceSynchronize();
    std::vector<float> ms(reps);
    cudaEvent_t begin, end;
    cudaEventCreate(&begin);
    cudaEventCreate(&end);
    for (float& t : ms) {
      cudaEventRecord(begin);
      run_at(20);
      cudaEventRecord(end);
      cudaEventSynchronize(end);
      cudaEventElapsedTime(&t, begin, end);
    }
    std::sort(ms.begin(), ms.end());
    const long long checked = std::min(batch, 65536LL);
    std::vector<Real> grad(std::size_t(checked) * n * n);
    std::vector<SolveStatus> statuses(checked);
    std::uint64_t sums[2];
    for (int k = 0; k < 2; ++k) {
      run_at(k == 0 ? 20 : T_check);
      cudaMemcpy(grad.data(), out, grad.size() * sizeof(Real), cudaMemcpyDeviceToHost);
      cudaMemcpy(statuses.data(), status, checked * sizeof(SolveStatus), cudaMemcpyDeviceToHost);
      sums[k] =
          checksum(statuses.data(), statuses.size() * sizeof(SolveStatus),
                   checksum(grad.data(), grad.size() * sizeof(Real), 14695981039346656037ull));
    }
    const cudaError_t error = cudaGetLastError();
    std::printf("%s/n%d/f%d %.4f %016llx %016llx %s\n", name, n, int(8 * sizeof(Real)),
                ms[ms.size() / 2], (unsigned long long)sums[0], (unsigned long long)sums[1],
                error == cudaSuccess ? "ok" : cudaGetErrorString(error));
    std::fflush(stdout);
  };
  constexpr auto as_stored = TileOrientation::as_stored;
  measure("unrolled", [&](int T) {
    launch<Real, Shape, as_stored>(M, G, out, status, iterations, batch, T, false,
                                   [](int T, int L) {
                                     return UnrolledTeam<Real, Shape>{T, L};
                                   });
  });
  measure("unrolled[columns_first:1e-06]", [&](int T) {
    launch<Real, Shape, as_stored>(M, G, out, status, iterations, batch, T, true,
                                   [&](int T, int L) {
                                     return ConventionUnrolledTeam<Real, Shape>{T, L, eps};
                                   });
  });
  measure("unrolled[tilekernels:1e-06]", [&](int T) {
    launch<Real, Shape, TileOrientation::transposed>(
        M, G, out, status, iterations, batch, T, true, [&](int T, int L) {
          return ConventionUnrolledTeam<Real, Shape>{T, L, tilekernels};
        });
  });
  cudaFree(M);
  cudaFree(G);
  cudaFree(out);
  cudaFree(status);
  cudaFree(iterations);
}

#define AB_NAME2(real, n) run_##real##_##n
#define AB_NAME(real, n) AB_NAME2(real, n)
void AB_NAME(AB_REAL, AB_N)(long long batch, int reps) {
  run<AB_REAL, AB_N>(batch, reps);
}

}  // namespace ab
#endif
