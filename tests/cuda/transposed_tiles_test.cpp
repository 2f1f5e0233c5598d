// The team kernels on transposed tiles (kernels/cuda/launch.cuh, TileOrientation). rows_first
// without eps runs the default forward and unrolled replay of M^T, transposed back; the plain
// systems after a forward that left R's columns exact solve the problem of R^T and G^T (the
// team kernels reading R and G transposed, `direct`'s per-matrix kernel on stream-ordered
// transposed copies). Either way the kernels see the same numbers as the default run on
// explicitly transposed batches, so each is compared with that run bit for bit; the forward
// also with the CPU, which runs the same team form on transposed views. Then all of it
// stream-ordered on a non-blocking stream of the caller's, against the waiting calls. Poisoned
// matrices are mixed into every batch. Skipped without a GPU.

#include <cuda_runtime.h>

#include <cstring>

#include "forward/sinkhorn_forward.hpp"
#include "kernels/cuda/check.hpp"
#include "tests/cuda/parity_support.hpp"
#include "tests/cuda/side_stream.hpp"

namespace sinkgrad::testing {
namespace {

const int sizes[] = {1, 2, 3, 4, 7, 8, 16, 32, 64};
const int step_counts[] = {1, 3, 20};

template <class T>
void expect_same_bits(const T* a, const T* b, std::size_t count, const char* what) {
  for (std::size_t k = 0; k < count; ++k)
    ASSERT_EQ(std::memcmp(&a[k], &b[k], sizeof(T)), 0) << what << " differ at " << k;
}

template <class Real>
void expect_same_bits(const HostBatch<Real>& a, const HostBatch<Real>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  expect_same_bits(a.data(), b.data(), static_cast<std::size_t>(a.size()), what);
}

// Not a multiple of any block's slice: the last slice is partial.
constexpr index_t batch_size = 299;

template <class Real>
void check_forward(int n, int T) {
  SCOPED_TRACE("n " + std::to_string(n) + " T " + std::to_string(T));
  auto rng = make_rng(static_cast<std::uint64_t>(1900 + 37 * n + T));
  const Inputs<Real> in = make_inputs<Real>(rng, batch_size, n, T, /*bad_matrices=*/true);
  const ForwardSpec rows_first{ForwardConvention::rows_first, 0.0};
  const auto size = static_cast<std::size_t>(batch_size);

  HostBatch<Real> R(batch_size, n, Real(-7)), Rt(batch_size, n, Real(-7)), R_cpu(batch_size, n);
  std::vector<Real> v(size, Real(-7)), vt(size, Real(-7)), v_cpu(size);
  const index_t bad =
      sinkhorn_forward<Real>(in.M.view(), T, R.view(), v.data(), Device::cuda, rows_first);
  const HostBatch<Real> Mt = transposed(in.M);
  EXPECT_EQ(sinkhorn_forward<Real>(Mt.view(), T, Rt.view(), vt.data(), Device::cuda), bad);
  EXPECT_EQ(bad, 1);  // make_inputs' infinite logit
  expect_same_bits(R, transposed(Rt), "rows_first(M) and columns_first(M^T)^T");
  expect_same_bits(v.data(), vt.data(), size, "their violations");

  // The CPU: the same team form on transposed views, so the forward parity bound applies.
  EXPECT_EQ(
      sinkhorn_forward<Real>(in.M.view(), T, R_cpu.view(), v_cpu.data(), Device::cpu, rows_first),
      bad);
  const double eps = std::numeric_limits<Real>::epsilon();
  const int nn = n * n;
  for (index_t b = 0; b < batch_size; ++b) {
    double largest = 0;
    for (int k = 0; k < nn; ++k)
      largest = std::max(largest, std::abs(double(in.M.data()[b * nn + k])));
    const double bound = 64 * eps * (1 + largest);
    for (int k = 0; k < nn; ++k) {
      const Real c = R_cpu.data()[b * nn + k], g = R.data()[b * nn + k];
      ASSERT_EQ(std::isnan(c), std::isnan(g)) << "matrix " << b;
      if (!std::isnan(c)) {
        ASSERT_NEAR(double(g), double(c), bound) << "matrix " << b;
      }
    }
    ASSERT_EQ(std::isnan(v_cpu[b]), std::isnan(v[b]));
    if (!std::isnan(v[b])) {
      ASSERT_NEAR(double(v[b]), double(v_cpu[b]), 4 * n * bound);
    }
  }
}

TEST(TransposedTiles, RowsFirstForwardIsTheDefaultOnTheTransposedLogits) {
  SINKGRAD_REQUIRE_GPU();
  for (int n : sizes)
    for (int T : step_counts) {
      check_forward<float>(n, T);
      check_forward<double>(n, T);
    }
}

// The solves that take the transposed path for a spec: unrolled only for rows_first without eps,
// the plain systems for every convention whose last step normalises columns.
std::vector<SolverCase> transposed_cases(const ForwardSpec& spec) {
  std::vector<SolverCase> cases;
  for (const SolverCase& c : solver_cases()) {
    const bool plain =
        c.name == "cg_plain" || (c.name == "direct" && c.options.at("system") == "plain");
    if (plain || (c.name == "unrolled" && is_transposed_default_forward(spec))) cases.push_back(c);
  }
  return cases;
}

// tilekernels without eps: with eps its gradient is carried from log B to M after the solve
// (core/log_base_chain.hpp), so it is no longer the transposed problem's.
const ForwardSpec columns_last_specs[] = {{ForwardConvention::rows_first, 0.0},
                                          {ForwardConvention::tilekernels, 0.0}};

template <class Real>
void check_solvers(const ForwardSpec& spec, int n, int T) {
  SCOPED_TRACE(describe(spec) + " n " + std::to_string(n) + " T " + std::to_string(T));
  auto rng = make_rng(static_cast<std::uint64_t>(2900 + 37 * n + T));
  Inputs<Real> in = make_inputs<Real>(rng, batch_size, n, T, /*bad_matrices=*/true);
  in.R = HostBatch<Real>(batch_size, n);  // R of this convention, with make_inputs' bad R rows
  sinkhorn_forward<Real>(in.M.view(), T, in.R.view(), nullptr, Device::cpu, spec);
  for (int j = 0; j < n; ++j) in.R(4, 0, j) = Real(0);
  in.R(5, n - 1, n - 1) = Real(-0.25);
  Inputs<Real> swapped = in;
  swapped.M = transposed(in.M);
  swapped.R = transposed(in.R);
  swapped.G = transposed(in.G);
  for (const SolverCase& c : transposed_cases(spec)) {
    SCOPED_TRACE(c.label());
    const auto solver = SolverRegistry::global().create(c.name, c.options);
    const Outputs<Real> a = solve_on(*solver, in, Device::cuda, spec);
    const Outputs<Real> b = solve_on(*solver, swapped, Device::cuda);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.iterations, b.iterations);
    EXPECT_EQ(a.status[0], SolveStatus::invalid_input);  // the NaN in G
    expect_same_bits(a.grad, transposed(b.grad), "the gradient and the transposed one's");
    expect_same_bits(a.history.data(), b.history.data(), a.history.size(), "residual histories");
  }
}

TEST(TransposedTiles, ColumnsLastSolvesAreTheDefaultOnTheTransposedProblem) {
  SINKGRAD_REQUIRE_GPU();
  for (const ForwardSpec& spec : columns_last_specs)
    for (int n : sizes)
      for (int T : step_counts) {
        check_solvers<float>(spec, n, T);
        check_solvers<double>(spec, n, T);
      }
}

template <class Real>
void check_on_stream(const ForwardSpec& spec, int n) {
  SCOPED_TRACE(describe(spec) + " n " + std::to_string(n));
  const int T = 20;
  auto rng = make_rng(static_cast<std::uint64_t>(3900 + n));
  const index_t batch = 3001;
  const Inputs<Real> in = make_inputs<Real>(rng, batch, n, T, /*bad_matrices=*/true);
  const SideStream stream;
  cuda::DeviceBatch<Real> M(in.M), R(batch, n), G(in.G);
  cuda::synchronize("uploads");
  sinkhorn_forward_async<Real>(M.view(), T, R.view(), stream.handle, spec);
  // The waiting forward, for the R it gives and as the reference of the stream-ordered one.
  Inputs<Real> same = in;
  same.R = HostBatch<Real>(batch, n);
  sinkhorn_forward<Real>(in.M.view(), T, same.R.view(), nullptr, Device::cuda, spec);
  for (const SolverCase& c : solver_cases()) {
    SCOPED_TRACE(c.label());
    const auto solver = SolverRegistry::global().create(c.name, c.options);
    cuda::DeviceBatch<Real> grad(batch, n);
    cuda::DeviceBuffer status(batch * sizeof(SolveStatus));
    cuda::DeviceBuffer iterations(batch * sizeof(std::int32_t));
    solver->solve_async(
        BackwardProblem<Real>{M.view(), R.view(), G.view(), T, spec, stream.handle},
        BackwardResult<Real>{grad.view(), status.as<SolveStatus>(), iterations.as<std::int32_t>()});
    SINKGRAD_CUDA_CHECK(cudaStreamSynchronize(stream.handle));
    const Outputs<Real> reference = solve_on(*solver, same, Device::cuda, spec);
    std::vector<SolveStatus> status_back(static_cast<std::size_t>(batch));
    cuda::copy_to_host(status_back.data(), status.data(), status.bytes());
    EXPECT_EQ(status_back, reference.status);
    expect_same_bits(grad.download(), reference.grad, "stream-ordered and waiting gradients");
  }
  expect_same_bits(R.download(), same.R, "stream-ordered and waiting forwards");
}

TEST(TransposedTiles, StreamOrderedOnASideStreamEqualsTheWaitingCalls) {
  SINKGRAD_REQUIRE_GPU();
  for (const ForwardSpec& spec : columns_last_specs)
    for (int n : {3, 8, 16, 64}) {
      check_on_stream<float>(spec, n);
      check_on_stream<double>(spec, n);
    }
}

}  // namespace
}  // namespace sinkgrad::testing
