// The output contract on results in device memory (core/solver_contract.hpp): a solver marked as
// a plugin's that writes NaN under ok, an unknown status, a negative iteration count, or nothing
// at all. A solve that waits throws as on the host; a stream-ordered one marks the matrix
// breakdown with a NaN gradient; the matrices that keep the contract are left as written; a
// built-in solver's result is not touched. Skipped without a GPU.

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/solver_contract.hpp"
#include "core/solver_registry.hpp"
#include "core/solver_variants.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "tests/cuda/gpu_required.hpp"

namespace sinkgrad::testing {
namespace {

enum class Mode { nan_ok, unknown_status, negative_iterations, silent };

// Matrix 5 breaks the contract as `mode` says; every other gets grad = 2 G, ok, 3 iterations.
// Written from the host into the device result (what a kernel would write; the contract's check
// is what is under test).
class BreakerSolver : public SolverVariants<BreakerSolver> {
 public:
  BreakerSolver(SolverInfo info, OptionValues options, Mode mode)
      : SolverVariants(std::move(info), std::move(options)), mode_(mode) {}

  template <class Real>
  void run_cpu(const BackwardProblem<Real>&, const BackwardResult<Real>&) const {}

  template <class Real>
  void run_cuda(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    if (mode_ == Mode::silent) return;
    const index_t batch = problem.grad_output.batch;
    const index_t nn = index_t(problem.grad_output.n) * problem.grad_output.n;
    std::vector<Real> grad(static_cast<std::size_t>(batch * nn));
    cuda::copy_to_host(grad.data(), problem.grad_output.data, grad.size() * sizeof(Real));
    for (Real& x : grad) x *= 2;
    std::vector<SolveStatus> status(static_cast<std::size_t>(batch), SolveStatus::ok);
    std::vector<std::int32_t> iterations(status.size(), 3);
    if (mode_ == Mode::nan_ok) grad[5 * nn + nn - 1] = std::numeric_limits<Real>::quiet_NaN();
    if (mode_ == Mode::unknown_status) status[5] = static_cast<SolveStatus>(9);
    if (mode_ == Mode::negative_iterations) iterations[5] = -4;
    cuda::copy_to_device(result.grad_logits.data, grad.data(), grad.size() * sizeof(Real));
    cuda::copy_to_device(result.status, status.data(), status.size() * sizeof(SolveStatus));
    cuda::copy_to_device(result.iterations, iterations.data(), iterations.size() * 4);
  }

 private:
  Mode mode_;
};

struct Outcome {
  std::vector<float> grad;
  std::vector<SolveStatus> status;
  std::vector<std::int32_t> iterations;
  std::string error;
};

constexpr index_t batch = 300;
constexpr int n = 4;

Outcome solve(Mode mode, bool plugin, bool wait) {
  SolverInfo info{"contract_breaker", "test", builtin_devices(), both_precisions(), {}};
  BreakerSolver solver(info, OptionValues{}, mode);
  if (plugin) mark_from_plugin(solver);
  std::vector<float> G(batch * n * n);
  for (std::size_t k = 0; k < G.size(); ++k) G[k] = float(k % 7) - 3.0f;
  cuda::DeviceBuffer R(G.size() * sizeof(float)), Gd(G.size() * sizeof(float)),
      grad(G.size() * sizeof(float)), status(batch * sizeof(SolveStatus)),
      iterations(batch * sizeof(std::int32_t));
  cuda::copy_to_device(Gd.data(), G.data(), Gd.bytes());
  cuda::copy_to_device(R.data(), G.data(), R.bytes());  // R's values do not matter here
  BackwardProblem<float> problem{{nullptr, 0, n, MemorySpace::device},
                                 {R.as<const float>(), batch, n, MemorySpace::device},
                                 {Gd.as<const float>(), batch, n, MemorySpace::device},
                                 5};
  BackwardResult<float> result{{grad.as<float>(), batch, n, MemorySpace::device},
                               status.as<SolveStatus>(),
                               iterations.as<std::int32_t>()};
  Outcome out;
  try {
    if (wait)
      solver.solve(problem, result, Device::cuda);
    else
      solver.solve_async(problem, result);
    cuda::synchronize("the device contract test");
  } catch (const Error& error) {
    out.error = error.what();
  }
  out.grad.resize(G.size());
  out.status.resize(batch);
  out.iterations.resize(batch);
  cuda::copy_to_host(out.grad.data(), grad.data(), grad.bytes());
  cuda::copy_to_host(out.status.data(), status.data(), status.bytes());
  cuda::copy_to_host(out.iterations.data(), iterations.data(), iterations.bytes());
  for (index_t b = 0; b < batch && mode != Mode::silent; ++b) {
    if (b == 5) continue;
    EXPECT_EQ(out.status[b], SolveStatus::ok) << b;
    EXPECT_EQ(out.iterations[b], 3) << b;
    for (int k = 0; k < n * n; ++k) EXPECT_EQ(out.grad[b * n * n + k], 2 * G[b * n * n + k]) << b;
  }
  return out;
}

bool all_nan(const Outcome& out, index_t b) {
  for (int k = 0; k < n * n; ++k)
    if (!std::isnan(out.grad[b * n * n + k])) return false;
  return true;
}

TEST(DeviceContract, NanUnderOkBecomesBreakdownWaitingOrNot) {
  SINKGRAD_REQUIRE_GPU();
  for (const bool wait : {true, false}) {
    const Outcome out = solve(Mode::nan_ok, true, wait);
    EXPECT_EQ(out.error, "");
    EXPECT_EQ(out.status[5], SolveStatus::breakdown);
    EXPECT_EQ(out.iterations[5], 3);
  }
}

TEST(DeviceContract, BreachesThrowWhenWaitingAndBreakDownWhenStreamOrdered) {
  SINKGRAD_REQUIRE_GPU();
  const std::vector<std::pair<Mode, std::string>> cases{
      {Mode::unknown_status, "matrix 5 has a status code outside the known codes 0..5"},
      {Mode::negative_iterations, "matrix 5 reports a negative number of iterations"},
      {Mode::silent, "it did not write the status of matrix 0"}};
  for (const auto& [mode, message] : cases) {
    SCOPED_TRACE(message);
    const Outcome waited = solve(mode, true, true);
    EXPECT_NE(waited.error.find("solver 'contract_breaker' broke its output contract: " + message),
              std::string::npos)
        << waited.error;
    if (mode == Mode::silent) continue;  // every matrix breaks it: the checks above do not hold
    const Outcome ordered = solve(mode, true, false);
    EXPECT_EQ(ordered.error, "");
    EXPECT_EQ(ordered.status[5], SolveStatus::breakdown);
    EXPECT_EQ(ordered.iterations[5], 0);
    EXPECT_TRUE(all_nan(ordered, 5));
  }
}

// Host-resident batches staged through the GPU: the device copies start as not written too,
// so that the host check names what the plugin left unwritten.
TEST(DeviceContract, StagedResultsAreCheckedOnTheHost) {
  SINKGRAD_REQUIRE_GPU();
  SolverInfo info{"contract_breaker", "test", builtin_devices(), both_precisions(), {}};
  for (const Mode mode : {Mode::silent, Mode::nan_ok}) {
    BreakerSolver solver(info, OptionValues{}, mode);
    mark_from_plugin(solver);
    HostBatch<float> R(batch, n, 0.25f), G(batch, n, 1.0f), grad(batch, n);
    std::vector<SolveStatus> status(static_cast<std::size_t>(batch));
    std::vector<std::int32_t> iterations(status.size());
    const BackwardProblem<float> problem{{nullptr, 0, n, MemorySpace::host}, R.view(), G.view(), 5};
    const BackwardResult<float> result{grad.view(), status.data(), iterations.data()};
    std::string error;
    try {
      solver.solve(problem, result, Device::cuda);
    } catch (const Error& e) {
      error = e.what();
    }
    if (mode == Mode::silent) {
      EXPECT_NE(error.find("it did not write the status of matrix 0"), std::string::npos) << error;
    } else {
      EXPECT_EQ(error, "");
      EXPECT_EQ(status[5], SolveStatus::breakdown);
      EXPECT_EQ(status[4], SolveStatus::ok);
    }
  }
}

TEST(DeviceContract, ABuiltInSolversResultIsLeftAsWritten) {
  SINKGRAD_REQUIRE_GPU();
  const Outcome out = solve(Mode::nan_ok, false, true);
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.status[5], SolveStatus::ok);
  EXPECT_TRUE(std::isnan(out.grad[5 * n * n + n * n - 1]));
}

}  // namespace
}  // namespace sinkgrad::testing
