// CUDA forward and solvers at B = 2^20 matrices (SINKGRAD_BENCH_BATCH overrides), n in
// {4, 8, 16, 32}, T = 20, float32 and float64, timed with CUDA events (manual time).
//
// Effective bandwidth counts the bytes that must move: the input matrices read once and the
// output written once (forward: M read, R written; implicit solvers: R and G read, dL/dM
// written; unrolled: M and G read, dL/dM written); the 8 bytes of status and iteration count
// per matrix are not counted. A device-to-device copy measured in the same run (bytes read +
// written) is the ceiling; every figure is also reported as a fraction of it ("of_copy").
// Input sets rotate between repetitions so that no repetition reads inputs left in the 50 MB
// L2 by the previous one (each set is larger than the L2 for B = 2^20, and there are at least
// two). The table printed at the end is what docs/performance.md records.
//
// The floor of a kernel is the larger of its memory time (those bytes at the copy ceiling) and
// its arithmetic time (the operations docs/math.md needs, at the device's peak issue rates:
// arithmetic_floor.hpp); "of_floor" = floor / measured time, "arith_over_mem" = arithmetic time
// / memory time. CG kernels are counted at the mean iteration count their warm-up measured
// ("cg_its").
//
//   sinkgrad_bench_cuda [--benchmark_filter=cg_corrected] [--benchmark_format=json ...]
//
// The forward, unrolled and the plain systems (whose path depends on the convention: the exact
// side) also run for rows_first, columns_first with eps = 1e-6, rows_first with eps = 1e-8
// and tilekernels (eps = 1e-6),
// named e.g. "forward[rows_first]/n8/f32", so that their speed is printed beside
// columns_first's. SINKGRAD_BENCH_FORWARD=NAME[:EPS] (e.g. rows_first, tilekernels:1e-6) runs
// every kernel for that forward convention instead, and only for it. SINKGRAD_BENCH_SIZES="96
// 128" replaces the n of every kernel (with a smaller SINKGRAD_BENCH_BATCH for large n).
// auto and cg_corrected followed by on_failure="unrolled"'s fallback are timed as they run in
// the layer (the fallback, which finds its matrices itself, included), with no failure and with 1%
// of the matrices failed; the counter not_ok says how many matrices the CG kernel left to the
// fallback.
// Under a base that is no scaling of exp(M) (tilekernels with eps > 0, mhc_triton) the implicit
// kernels are followed by the carry of their gradient to M, as the checked solve runs them, and
// their bytes include M; "carry" times that pass alone (M and g read, g written).

#pragma nv_diag_suppress 554  // BatchView<const T>'s self-conversion (core/batch.hpp)

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "arithmetic_floor.hpp"
#include "core/device_runtime.hpp"
#include "core/log_base_chain.hpp"
#include "core/solver_registry.hpp"
#include "forward/forward_cuda.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "solvers/cg_corrected/cg_corrected_cuda.hpp"
#include "solvers/cg_plain/cg_plain_cuda.hpp"
#include "solvers/common/invariant_side.hpp"
#include "solvers/direct/direct_cuda.hpp"
#include "solvers/direct/direct_cuda_units.hpp"
#include "solvers/unrolled/unrolled_cuda.hpp"
#include "solvers/unrolled/unrolled_fallback.hpp"

namespace sinkgrad {
namespace {

constexpr int forward_iterations = 20;

ForwardSpec bench_forward() {
  const char* text = std::getenv("SINKGRAD_BENCH_FORWARD");
  if (text == nullptr) return {};
  const std::string spec = text;
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return make_forward_spec(spec);
  return make_forward_spec(spec.substr(0, colon), std::stod(spec.substr(colon + 1)));
}

std::vector<int> bench_sizes() {
  const char* text = std::getenv("SINKGRAD_BENCH_SIZES");
  if (text == nullptr) return {4, 8, 16, 32};
  std::vector<int> sizes;
  for (const char* p = text; *p != 0;) {
    char* end = nullptr;
    const long n = std::strtol(p, &end, 10);
    if (end == p) break;
    if (n > 0) sizes.push_back(static_cast<int>(n));
    p = end;
  }
  return sizes;
}

index_t bench_batch() {
  const char* text = std::getenv("SINKGRAD_BENCH_BATCH");
  return text != nullptr ? std::atoll(text) : index_t(1) << 20;
}

// Gaussian-ish logits or gradients (Box-Muller on a counter hash): data that is not zeros.
template <class Real>
__global__ void fill_normal(Real* x, index_t count, unsigned long long seed, Real scale) {
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count; k += step) {
    unsigned long long z = seed + 0x9E3779B97F4A7C15ULL * static_cast<unsigned long long>(k + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    const double u1 = (double(z >> 40) + 1.0) / 16777217.0;
    const double u2 = double((z >> 16) & 0xFFFFFF) / 16777216.0;
    x[k] = static_cast<Real>(scale * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
  }
}

template <class Real>
void fill(Real* x, index_t count, unsigned long long seed) {
  fill_normal<Real><<<1024, 256>>>(x, count, seed, Real(1));
  SINKGRAD_CUDA_CHECK_LAUNCH("fill_normal");
}

double copy_bandwidth_gbs = 0;  // bytes read + written per second / 1e9, measured in main

// What arithmetic_seconds needs of the device, read in main.
struct DevicePeak {
  int major = 0, minor = 0, sms = 0;
  double clock_khz = 0;
};
DevicePeak device_peak;

struct Row {
  std::string name;
  double ms;
  double gbs;
  double of_floor;
  double arith_over_mem;
};
std::vector<Row>& rows() {
  static std::vector<Row> r;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Device copy of 2 GiB, median of 20: the bandwidth ceiling of this run.
double measure_copy_bandwidth() {
  const std::size_t bytes = std::size_t(1) << 31;
  cuda::DeviceBuffer a(bytes), b(bytes);
  cuda::fill_bytes(a.data(), 1, bytes);
  cudaEvent_t start, stop;
  SINKGRAD_CUDA_CHECK(cudaEventCreate(&start));
  SINKGRAD_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int k = 0; k < 22; ++k) {
    SINKGRAD_CUDA_CHECK(cudaEventRecord(start));
    SINKGRAD_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
    SINKGRAD_CUDA_CHECK(cudaEventRecord(stop));
    SINKGRAD_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    SINKGRAD_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (k >= 2) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * double(bytes) / (median(ms) * 1e6);
}

enum class Kernel {
  forward,
  unrolled,
  cg_plain_schur,
  cg_plain_block,
  cg_corrected,
  direct_corrected,
  // direct's corrected system one matrix per thread (its launch for n > 1024), at n <= 16:
  // timed beside the team form that n <= 1024 runs.
  direct_corrected_thread,
  direct_plain,
  // auto (cg_corrected with max_violation 1e-5, then the exact fallback, mark mode), and
  // cg_corrected followed by on_failure="unrolled"'s fallback (keep mode); the "1%" forms mark
  // every 100th matrix failed after the CG kernel, so that the fallback replays 1% of the batch
  // spread through it; "none past" runs auto's kernels with a max_violation no matrix exceeds
  // (at T = 20 some matrices of these inputs are farther than 1e-5 from converged: auto gives
  // them unrolled's gradient, counted in not_ok).
  automatic,
  automatic_none,
  automatic_1pct,
  on_failure,
  on_failure_1pct,
  // The carry to M alone (core/log_base_chain.hpp) on a gradient in place: M and g read, g
  // written; timed under the bases that need it.
  carry
};

const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::forward:
      return "forward";
    case Kernel::unrolled:
      return "unrolled";
    case Kernel::cg_plain_schur:
      return "cg_plain(schur)";
    case Kernel::cg_plain_block:
      return "cg_plain(block)";
    case Kernel::cg_corrected:
      return "cg_corrected";
    case Kernel::direct_corrected:
      return "direct(corrected)";
    case Kernel::direct_corrected_thread:
      return "direct(corrected,thread)";
    case Kernel::direct_plain:
      return "direct(plain)";
    case Kernel::automatic:
      return "auto";
    case Kernel::automatic_none:
      return "auto(none past max_violation)";
    case Kernel::automatic_1pct:
      return "auto(1% fail)";
    case Kernel::on_failure:
      return "cg_corrected+on_failure";
    case Kernel::on_failure_1pct:
      return "cg_corrected+on_failure(1% fail)";
    case Kernel::carry:
      return "carry";
  }
  return "?";
}

// The solvers' auto CG settings (solvers/common/cg_options.hpp): tolerance 1e-5 / 1e-12, 2n or 4n
// iterations, the floor at 2n unit roundoffs of b's terms.
template <class Real>
math::CgSettings<Real> auto_settings(int iterations, int n) {
  return {iterations, sizeof(Real) == 4 ? Real(1e-5) : Real(1e-12), Real(2 * n)};
}

// The side the implicit solvers project on by default (project=true), in the coordinates of
// the solvers that eliminate the exact side (cg_plain, cg_corrected, direct plain): transposed
// after a forward that left the columns exact (solvers/common/invariant_side.hpp).
// SINKGRAD_BENCH_PROJECT=0: no projection (project=false), to time what it costs.
template <class Real>
math::GradientSide default_side(const BackwardProblem<Real>& p) {
  static const bool project = [] {
    const char* text = std::getenv("SINKGRAD_BENCH_PROJECT");
    return text == nullptr || std::string_view(text) != "0";
  }();
  if (!project) return math::GradientSide::none;
  const math::GradientSide side = invariant_side(p.forward);
  return last_step_normalises_columns(p.forward.convention) ? transposed_side(side) : side;
}

// Every 100th matrix (from 37) marked not_converged: a failure spread through the batch.
__global__ void fail_one_in_100(SolveStatus* status, index_t batch) {
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < batch; b += step)
    if (b % 100 == 37) status[b] = SolveStatus::not_converged;
}

// The kernels that give the implicit gradient, dL/d(log B) (all but the forward, unrolled and
// the carry itself).
bool is_implicit(Kernel k) {
  return k != Kernel::forward && k != Kernel::unrolled && k != Kernel::carry;
}

bool has_fallback(Kernel k) {
  return k == Kernel::automatic || k == Kernel::automatic_none || k == Kernel::automatic_1pct ||
         k == Kernel::on_failure || k == Kernel::on_failure_1pct;
}

bool kernel_uses_cg(Kernel k) {
  return is_implicit(k) && k != Kernel::direct_corrected && k != Kernel::direct_corrected_thread &&
         k != Kernel::direct_plain;
}

// The carry of an implicit gradient to M where the checked solve runs it (a no-op under the
// other bases): after the solve, unless the solve carried it in its kernel (by_solve: the CG
// kernels, up to the SolverInfo::cuda_carry_max_n of their solvers).
template <class Real>
void carry(const BackwardProblem<Real>& p, const BackwardResult<Real>& r, bool by_solve) {
  if (!by_solve || p.grad_output.n > one_lane_carry_max_n)
    device::carry_to_logits(p.logits, p.forward, r, p.stream);
}

// As the layer runs them: auto carries after its fallback (which marks the matrices it replays
// and the carry skips); cg_corrected is carried by its solve, before on_failure's fallback.
template <class Real>
void corrected_then_fallback(const BackwardProblem<Real>& p, const BackwardResult<Real>& r,
                             math::ImplicitTrust<Real> trust, bool fail, FallbackStatus mode) {
  const int n = p.grad_output.n;
  cuda::cg_corrected(p, r, auto_settings<Real>(2 * n, n), default_side(p), trust);
  if (mode == FallbackStatus::keep) carry(p, r, true);
  if (fail) {
    const index_t batch = p.grad_output.batch;
    fail_one_in_100<<<static_cast<unsigned>(std::min<index_t>((batch + 255) / 256, 4096)), 256>>>(
        r.status, batch);
  }
  cuda::replace_by_unrolled(p, r, mode);
  if (mode == FallbackStatus::mark) carry(p, r, true);
}

template <class Real>
void run_kernel(Kernel kernel, const BackwardProblem<Real>& p, const BackwardResult<Real>& r) {
  const int n = p.grad_output.n;
  switch (kernel) {
    case Kernel::forward:
      if (is_default_forward(p.forward))
        cuda::sinkhorn_forward<Real>(p.logits, forward_iterations, r.grad_logits, nullptr);
      else
        cuda::convention_forward<Real>(p.logits, forward_iterations, r.grad_logits, nullptr,
                                       nullptr, p.forward);
      break;
    case Kernel::unrolled:
      cuda::unrolled(p, r);
      break;
    case Kernel::cg_plain_schur:
      cuda::cg_plain(p, r, math::PlainSystem::schur, auto_settings<Real>(2 * n, n),
                     default_side(p));
      break;
    case Kernel::cg_plain_block:
      cuda::cg_plain(p, r, math::PlainSystem::block, auto_settings<Real>(4 * n, n),
                     default_side(p));
      break;
    case Kernel::cg_corrected:
      cuda::cg_corrected(p, r, auto_settings<Real>(2 * n, n), default_side(p));
      break;
    case Kernel::automatic:
    case Kernel::automatic_1pct:
      corrected_then_fallback(p, r,
                              {Real(math::auto_max_violation), Real(math::auto_gradient_floor)},
                              kernel == Kernel::automatic_1pct, FallbackStatus::mark);
      break;
    case Kernel::automatic_none:
      corrected_then_fallback(p, r, {}, false, FallbackStatus::mark);
      break;
    case Kernel::on_failure:
    case Kernel::on_failure_1pct:
      corrected_then_fallback(p, r, {}, kernel == Kernel::on_failure_1pct, FallbackStatus::keep);
      break;
    case Kernel::direct_corrected:
      cuda::direct(p, r, math::SchurSystem::corrected, invariant_side(p.forward));
      break;
    case Kernel::direct_corrected_thread:
      cuda::direct_detail::per_matrix(p, r, math::SchurSystem::corrected,
                                      invariant_side(p.forward));
      break;
    case Kernel::direct_plain:
      cuda::direct(p, r, math::SchurSystem::plain, default_side(p));
      break;
    case Kernel::carry:
      carry(p, r, false);
      break;
  }
  if (is_implicit(kernel) && !has_fallback(kernel)) carry(p, r, kernel_uses_cg(kernel));
}

// Per matrix, for arithmetic_floor.hpp: the CG kernels at `iterations` (the measured mean), the
// fallbacks' replay on `replayed` of the batch.
bench::Ops operations(Kernel kernel, int n, double iterations, double replayed) {
  const int T = forward_iterations;
  switch (kernel) {
    case Kernel::forward:
      return bench::forward_ops(n, T);
    case Kernel::unrolled:
      return bench::unrolled_ops(n, T);
    case Kernel::cg_plain_schur:
      return bench::cg_plain_schur_ops(n, iterations);
    case Kernel::cg_plain_block:
      return bench::cg_plain_block_ops(n, iterations);
    case Kernel::cg_corrected:
      return bench::cg_corrected_ops(n, iterations);
    case Kernel::direct_corrected:
    case Kernel::direct_corrected_thread:
      return bench::direct_corrected_ops(n);
    case Kernel::direct_plain:
      return bench::direct_plain_ops(n);
    case Kernel::carry:
      return bench::carry_ops(n);
    case Kernel::automatic:
    case Kernel::automatic_none:
    case Kernel::automatic_1pct:
    case Kernel::on_failure:
    case Kernel::on_failure_1pct:
      return bench::corrected_then_unrolled_ops(n, T, iterations, replayed);
  }
  return {};
}

template <class Real>
void bench(benchmark::State& state, const std::string& name, Kernel kernel, int n,
           const ForwardSpec& spec) {
  const index_t batch = bench_batch();
  const index_t count = batch * n * n;
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(Real);
  // Enough sets that two consecutive repetitions never share inputs and the inputs of one
  // set (2 or 3 arrays) exceed the L2 several times over.
  const int sets = bytes >= (std::size_t(1) << 30) ? 1 : 2;
  struct Set {
    cuda::DeviceBuffer M, R, G;
  };
  std::vector<Set> inputs(static_cast<std::size_t>(sets));
  for (int s = 0; s < sets; ++s) {
    Set& set = inputs[static_cast<std::size_t>(s)];
    set.M = cuda::DeviceBuffer(bytes);
    set.G = cuda::DeviceBuffer(bytes);
    if (kernel != Kernel::forward && kernel != Kernel::unrolled && kernel != Kernel::carry)
      set.R = cuda::DeviceBuffer(bytes);
    fill(set.M.as<Real>(), count, 1000ULL * s + 1);
    fill(set.G.as<Real>(), count, 1000ULL * s + 2);
    if (set.R.data() != nullptr) {
      const BatchView<const Real> M{set.M.as<const Real>(), batch, n, MemorySpace::device};
      const BatchView<Real> R{set.R.as<Real>(), batch, n, MemorySpace::device};
      if (is_default_forward(spec))
        cuda::sinkhorn_forward<Real>(M, forward_iterations, R, nullptr);
      else
        cuda::convention_forward<Real>(M, forward_iterations, R, nullptr, nullptr, spec);
    }
  }
  cuda::DeviceBuffer grad(bytes), status(batch * sizeof(SolveStatus)),
      iterations(batch * sizeof(std::int32_t));
  if (kernel == Kernel::carry) {  // an implicit gradient to carry, every matrix ok
    fill(grad.as<Real>(), count, 3);
    cuda::fill_bytes(status.data(), 0, status.bytes());
  }
  BackwardResult<Real> result{{grad.as<Real>(), batch, n, MemorySpace::device},
                              status.as<SolveStatus>(),
                              iterations.as<std::int32_t>()};
  const auto problem_of = [&](int s) {
    const Set& set = inputs[static_cast<std::size_t>(s)];
    return BackwardProblem<Real>{{set.M.as<const Real>(), batch, n, MemorySpace::device},
                                 {set.R.as<const Real>(), batch, n, MemorySpace::device},
                                 {set.G.as<const Real>(), batch, n, MemorySpace::device},
                                 forward_iterations,
                                 spec};
  };
  run_kernel<Real>(kernel, problem_of(0), result);  // warm-up (module load, attributes)
  cuda::synchronize(kernel_name(kernel));
  // The matrices the warm-up did not solve by CG (auto: fallback; the others: not ok), and the
  // mean CG iteration count: over all matrices, or (with a fallback, which writes its own
  // count) over those CG solved.
  double not_ok = 0, cg_iterations = 0;
  if (kernel != Kernel::forward && kernel != Kernel::carry) {
    std::vector<SolveStatus> statuses(static_cast<std::size_t>(batch));
    cuda::copy_to_host(statuses.data(), status.data(), status.bytes());
    std::vector<std::int32_t> counts(static_cast<std::size_t>(batch));
    cuda::copy_to_host(counts.data(), iterations.data(), iterations.bytes());
    const bool fallback = has_fallback(kernel);
    double sum = 0, summed = 0;
    for (std::size_t b = 0; b < statuses.size(); ++b) {
      const bool ok = statuses[b] == SolveStatus::ok;
      not_ok += ok ? 0 : 1;
      if (ok || !fallback) {
        sum += counts[b];
        summed += 1;
      }
    }
    cg_iterations = summed > 0 ? sum / summed : 0;
    state.counters["not_ok"] = not_ok;
  }

  cudaEvent_t start, stop;
  SINKGRAD_CUDA_CHECK(cudaEventCreate(&start));
  SINKGRAD_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  int repetition = 0;
  for (auto _ : state) {
    const BackwardProblem<Real> problem = problem_of(++repetition % sets);
    SINKGRAD_CUDA_CHECK(cudaEventRecord(start));
    run_kernel<Real>(kernel, problem, result);
    SINKGRAD_CUDA_CHECK(cudaEventRecord(stop));
    SINKGRAD_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SINKGRAD_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms / 1e3);
    times.push_back(ms);
  }
  cuda::synchronize(kernel_name(kernel));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);

  const bool carried = is_implicit(kernel) && carries_log_base_gradient(spec);
  const double moved = double(bytes) * (kernel == Kernel::forward ? 2 : carried ? 4 : 3);
  const double ms = median(times);
  const double gbs = moved / (ms * 1e6);
  state.counters["GB/s"] = gbs;
  state.counters["of_copy"] = gbs / copy_bandwidth_gbs;
  state.counters["median_ms"] = ms;

  const bench::Ops ops = operations(kernel, n, cg_iterations, not_ok / double(batch));
  if (kernel_uses_cg(kernel)) state.counters["cg_its"] = cg_iterations;
  const double memory_s = moved / (copy_bandwidth_gbs * 1e9);
  const double arithmetic_s =
      bench::arithmetic_seconds(ops, sizeof(Real) == 8, double(batch), device_peak.major,
                                device_peak.minor, device_peak.sms, device_peak.clock_khz);
  const double of_floor = std::max(memory_s, arithmetic_s) / (ms / 1e3);
  const double arith_over_mem = arithmetic_s / memory_s;
  state.counters["of_floor"] = of_floor;
  state.counters["arith_over_mem"] = arith_over_mem;
  rows().push_back({name, ms, gbs, of_floor, arith_over_mem});
}

// "" for the default forward, else "[rows_first]", "[tilekernels:1e-06]", ...
std::string convention_label(const ForwardSpec& spec) {
  if (is_default_forward(spec)) return "";
  std::string label = "[" + std::string(to_string(spec.convention));
  if (spec.eps != 0) {
    char eps[32];
    std::snprintf(eps, sizeof(eps), ":%.0e", spec.eps);
    label += eps;
  }
  return label + "]";
}

void register_all() {
  benchmark::RegisterBenchmark("copy/device_to_device",
                               [](benchmark::State& state) {
                                 for (auto _ : state) state.SetIterationTime(1e-3);
                                 state.counters["GB/s"] = copy_bandwidth_gbs;
                               })
      ->Iterations(1)
      ->UseManualTime();
  const Kernel kernels[] = {Kernel::forward,
                            Kernel::unrolled,
                            Kernel::cg_plain_schur,
                            Kernel::cg_plain_block,
                            Kernel::cg_corrected,
                            Kernel::direct_corrected,
                            Kernel::direct_corrected_thread,
                            Kernel::direct_plain,
                            Kernel::automatic,
                            Kernel::automatic_none,
                            Kernel::automatic_1pct,
                            Kernel::on_failure,
                            Kernel::on_failure_1pct,
                            Kernel::carry};
  // The other conventions for the kernels whose path depends on them.
  const bool one_forward = std::getenv("SINKGRAD_BENCH_FORWARD") != nullptr;
  std::vector<ForwardSpec> specs{bench_forward()};
  if (!one_forward)
    for (const ForwardSpec& spec : {ForwardSpec{ForwardConvention::rows_first, 0.0},
                                    ForwardSpec{ForwardConvention::columns_first, 1e-6},
                                    ForwardSpec{ForwardConvention::rows_first, 1e-8},
                                    ForwardSpec{ForwardConvention::tilekernels, 1e-6}})
      specs.push_back(spec);
  for (const ForwardSpec& spec : specs)
    for (Kernel kernel : kernels) {
      // The exact side, and under tilekernels (eps > 0) the carry to M.
      const bool depends_on_convention = kernel == Kernel::forward || kernel == Kernel::unrolled ||
                                         kernel == Kernel::cg_plain_schur ||
                                         kernel == Kernel::cg_corrected ||
                                         kernel == Kernel::direct_plain || kernel == Kernel::carry;
      if (!one_forward && !is_default_forward(spec) && !depends_on_convention) continue;
      if (kernel == Kernel::carry && !carries_log_base_gradient(spec)) continue;
      for (int n : bench_sizes()) {
        if (kernel == Kernel::direct_plain && n > 16) continue;  // Jacobi: O(n^3) per sweep
        if (kernel == Kernel::direct_corrected_thread && n > 16) continue;
        for (int precision = 0; precision < 2; ++precision) {
          const std::string name = std::string(kernel_name(kernel)) + convention_label(spec) +
                                   "/n" + std::to_string(n) + (precision == 0 ? "/f32" : "/f64");
          benchmark::internal::Benchmark* b = nullptr;
          if (precision == 0)
            b = benchmark::RegisterBenchmark(name.c_str(),
                                             [name, kernel, n, spec](benchmark::State& s) {
                                               bench<float>(s, name, kernel, n, spec);
                                             });
          else
            b = benchmark::RegisterBenchmark(name.c_str(),
                                             [name, kernel, n, spec](benchmark::State& s) {
                                               bench<double>(s, name, kernel, n, spec);
                                             });
          b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(8);
        }
      }
    }
}

}  // namespace
}  // namespace sinkgrad

int main(int argc, char** argv) {
  using namespace sinkgrad;
  benchmark::Initialize(&argc, argv);
  cuda::require_device();
  cudaDeviceProp prop{};
  SINKGRAD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  SINKGRAD_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  device_peak = {prop.major, prop.minor, prop.multiProcessorCount, double(clock_khz)};
  copy_bandwidth_gbs = measure_copy_bandwidth();
  std::printf(
      "device: %s, %d SMs, L2 %d MB; B = %lld, T = %d; forward %s; copy ceiling %.0f GB/s\n",
      prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
      static_cast<long long>(bench_batch()), forward_iterations, describe(bench_forward()).c_str(),
      copy_bandwidth_gbs);
  const bench::LanesPerSm lanes = bench::lanes_per_sm(prop.major, prop.minor);
  const double per_lane = prop.multiProcessorCount * clock_khz * 1e3 / 1e12;
  std::printf(
      "arithmetic peaks (cc %d.%d, %.0f MHz): issue %.1f, FP32 %.1f, FP64 %.1f, MUFU %.1f "
      "T thread-instructions/s\n",
      prop.major, prop.minor, clock_khz / 1e3, lanes.issue * per_lane, lanes.fp32 * per_lane,
      lanes.fp64 * per_lane, lanes.mufu * per_lane);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // New columns go at the end: scripts/gpu_bench_compare.py reads the first two.
  std::printf(
      "\n| kernel / n / dtype | ms (median) | GB/s | of copy (%.0f GB/s) | of floor | arith / mem "
      "|\n|---|---|---|---|---|---|\n",
      copy_bandwidth_gbs);
  for (const auto& row : rows())
    std::printf("| %s | %.3f | %.0f | %.2f | %.2f | %.2f |\n", row.name.c_str(), row.ms, row.gbs,
                row.gbs / copy_bandwidth_gbs, row.of_floor, row.arith_over_mem);
  return 0;
}
