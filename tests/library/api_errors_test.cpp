// Misuse of the API ends in a sinkgrad::Error whose message says what is wrong and what would be
// accepted, before anything is computed.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/solver_registry.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

// Runs f, expects a sinkgrad::Error, and checks that its message contains every fragment.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const Error& error) {
    const std::string message = error.what();
    for (const auto& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message \"" << message << "\" does not mention \"" << fragment << "\"";
    return;
  } catch (const std::exception& other) {
    ADD_FAILURE() << "expected sinkgrad::Error, got " << other.what();
    return;
  }
  ADD_FAILURE() << "expected sinkgrad::Error, nothing was thrown";
}

std::unique_ptr<BackwardSolver> create(const std::string& name,
                                       const std::map<std::string, std::string>& options = {}) {
  return SolverRegistry::global().create(name, options);
}

TEST(ApiErrors, UnknownSolverListsTheSolvers) {
  const auto names = SolverRegistry::global().names();
  for (const char* expected : {"unrolled", "cg_plain", "cg_corrected", "direct"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  std::vector<std::string> fragments = {"no_such_solver"};
  fragments.insert(fragments.end(), names.begin(), names.end());
  expect_error([] { create("no_such_solver"); }, fragments);
  EXPECT_FALSE(SolverRegistry::global().contains("no_such_solver"));
  expect_error([] { SolverRegistry::global().info("CG_PLAIN"); }, {"CG_PLAIN", "cg_plain"});
}

TEST(ApiErrors, UnknownOptionListsTheOptions) {
  expect_error(
      [] {
        create("cg_corrected", {{"tol", "1e-6"}});
      },
      {"tol", "cg_corrected", "max_iterations", "tolerance"});
  expect_error(
      [] {
        create("cg_plain", {{"sytem", "block"}});
      },
      {"sytem", "system", "max_iterations", "tolerance"});
  expect_error([] { create("direct", {{"tolerance", "1e-6"}}); }, {"tolerance", "system"});
  expect_error([] { create("unrolled", {{"segment", "4"}}); }, {"segment", "no options"});
}

TEST(ApiErrors, BadOptionValuesSayWhatIsAccepted) {
  for (const char* solver : {"cg_plain", "cg_corrected"}) {
    SCOPED_TRACE(solver);
    expect_error(
        [&] {
          create(solver, {{"max_iterations", "0"}});
        },
        {"max_iterations", "'0'", "from 1 to 1000000", "auto"});
    // Bounded and never narrowed: 2^32 + 1 is not read as 1.
    expect_error(
        [&] {
          create(solver, {{"max_iterations", "4294967297"}});
        },
        {"max_iterations", "'4294967297'", "from 1 to 1000000"});
    expect_error(
        [&] {
          create(solver, {{"max_iterations", "2.5"}});
        },
        {"max_iterations", "integer"});
    expect_error([&] { create(solver, {{"max_iterations", ""}}); }, {"max_iterations"});
    expect_error([&] { create(solver, {{"tolerance", "-1"}}); }, {"tolerance", "'-1'", ">= 0"});
    expect_error([&] { create(solver, {{"tolerance", "abc"}}); }, {"tolerance", "number"});
    expect_error([&] { create(solver, {{"tolerance", "nan"}}); }, {"tolerance"});
    expect_error([&] { create(solver, {{"tolerance", "1e-3x"}}); }, {"tolerance"});
  }
  expect_error(
      [] {
        create("cg_plain", {{"system", "foo"}});
      },
      {"system", "foo", "schur", "block"});
  expect_error(
      [] {
        create("direct", {{"system", "foo"}});
      },
      {"system", "foo", "corrected", "plain"});
  // The accepted forms, for contrast.
  EXPECT_NO_THROW(create("cg_plain", {{"system", "block"}, {"max_iterations", "3"}}));
  EXPECT_NO_THROW(create("cg_corrected", {{"tolerance", "0"}, {"max_iterations", "auto"}}));
  EXPECT_NO_THROW(create("direct", {{"system", "plain"}}));
}

TEST(ApiErrors, KeyValueParsing) {
  EXPECT_EQ(parse_key_value("system=block"),
            std::make_pair(std::string("system"), std::string("block")));
  EXPECT_EQ(parse_key_value("tolerance=1e-3=x").second, "1e-3=x");
  expect_error([] { parse_key_value("system"); }, {"system", "key=value"});
  expect_error([] { parse_key_value("=block"); }, {"key=value"});
}

// A well-formed problem that each test breaks in one way.
struct Problem {
  HostBatch<double> M{3, 4}, R{3, 4}, G{3, 4}, grad{3, 4};
  std::vector<SolveStatus> status = std::vector<SolveStatus>(3);
  std::vector<std::int32_t> iterations = std::vector<std::int32_t>(3);
  BackwardProblem<double> problem;
  BackwardResult<double> result;

  Problem() {
    auto rng = make_rng(300);
    M = normal_batch<double>(rng, 3, 4);
    G = normal_batch<double>(rng, 3, 4);
    R = forward(M, 5);
    problem = {M.view(), R.view(), G.view(), 5};
    result.grad_logits = grad.view();
    result.status = status.data();
    result.iterations = iterations.data();
  }
};

TEST(ApiErrors, WellFormedProblemSolves) {
  for (const auto& config : all_solver_configs()) {
    Problem p;
    EXPECT_NO_THROW(config.create()->solve(p.problem, p.result)) << config.label();
  }
}

TEST(ApiErrors, ForwardIterationsMustBePositive) {
  for (const auto& config : all_solver_configs()) {
    SCOPED_TRACE(config.label());
    for (int T : {0, -3}) {
      Problem p;
      p.problem.forward_iterations = T;
      expect_error([&] { config.create()->solve(p.problem, p.result); },
                   {"T", ">= 1", std::to_string(T)});
    }
  }
}

TEST(ApiErrors, MismatchedShapesNameTheBatch) {
  HostBatch<double> wrong_n(3, 5), wrong_b(2, 4);
  for (const auto& config : all_solver_configs()) {
    SCOPED_TRACE(config.label());
    const auto solver = config.create();
    {
      Problem p;
      p.problem.grad_output = wrong_n.view();
      expect_error([&] { solver->solve(p.problem, p.result); },
                   {"grad_output", "(3, 5, 5)", "(3, 4, 4)"});
    }
    {
      Problem p;
      p.result.grad_logits = wrong_b.view();
      expect_error([&] { solver->solve(p.problem, p.result); }, {"grad_logits", "(2, 4, 4)"});
    }
    {
      Problem p;
      p.problem.logits = wrong_b.view();
      expect_error([&] { solver->solve(p.problem, p.result); }, {"logits", "(2, 4, 4)"});
    }
  }
}

TEST(ApiErrors, UnrolledNeedsTheLogits) {
  Problem p;
  p.problem.logits = {};
  expect_error([&] { create("unrolled")->solve(p.problem, p.result); }, {"unrolled", "logits"});
  // The implicit solvers do not.
  for (const auto& config : implicit_solver_configs()) {
    Problem q;
    q.problem.logits = {};
    EXPECT_NO_THROW(config.create()->solve(q.problem, q.result)) << config.label();
  }
}

TEST(ApiErrors, MissingOutputArrays) {
  for (const auto& config : all_solver_configs()) {
    SCOPED_TRACE(config.label());
    const auto solver = config.create();
    {
      Problem p;
      p.result.status = nullptr;
      expect_error([&] { solver->solve(p.problem, p.result); }, {"status"});
    }
    {
      Problem p;
      p.result.iterations = nullptr;
      expect_error([&] { solver->solve(p.problem, p.result); }, {"iterations"});
    }
    {
      Problem p;
      p.result.grad_logits.data = nullptr;
      expect_error([&] { solver->solve(p.problem, p.result); }, {"grad_logits"});
    }
    {
      Problem p;
      p.problem.grad_output.data = nullptr;
      expect_error([&] { solver->solve(p.problem, p.result); }, {"grad_output"});
    }
  }
}

TEST(ApiErrors, ResidualHistoryTooShort) {
  for (const char* name : {"cg_plain", "cg_corrected"}) {
    SCOPED_TRACE(name);
    const auto solver = create(name);
    const int needed = solver->history_length(4, Precision::float64);
    ASSERT_GE(needed, 2);
    Problem p;
    std::vector<double> history(3 * needed);
    p.result.residual_history = history.data();
    p.result.history_stride = needed - 1;
    expect_error([&] { solver->solve(p.problem, p.result); },
                 {"residual_history", std::to_string(needed)});
  }
}

TEST(ApiErrors, DeviceMemoryOnTheCpuIsRefused) {
  for (const auto& config : all_solver_configs()) {
    Problem p;
    p.problem.forward_output.space = MemorySpace::device;
    expect_error([&] { config.create()->solve(p.problem, p.result); }, {"host memory"});
  }
}

// R written over logits that another matrix has yet to read gave a wrong R and no error.
TEST(ApiErrors, ForwardOutputsNeedMemoryOfTheirOwn) {
  const int B = 3, n = 4, T = 5;
  HostBatch<double> both(2 * B, n);
  const BatchView<const double> logits{both.view().data, B, n};
  for (const index_t shift : {index_t(0), index_t(1), index_t(B - 1)}) {
    const BatchView<double> R{both.view().data + shift * n * n, B, n};
    expect_error([&] { sinkhorn_forward<double>(logits, T, R, nullptr); }, {"R overlaps logits"});
    expect_error(
        [&] {
          sinkhorn_forward<double>(logits, T, R, nullptr, Device::cpu,
                                   ForwardSpec{ForwardConvention::tilekernels, 1e-6});
        },
        {"R overlaps logits"});
  }
  HostBatch<double> R(B, n);
  std::vector<double> violation(B);
  expect_error([&] { sinkhorn_forward<double>(logits, T, R.view(), both.view().data); },
               {"column_violation overlaps logits or R"});
  expect_error([&] { sinkhorn_forward<double>(logits, T, R.view(), R.view().data + 1); },
               {"column_violation overlaps logits or R"});
  // Right after the logits is apart from them.
  const BatchView<double> after{both.view().data + B * n * n, B, n};
  EXPECT_NO_THROW(sinkhorn_forward<double>(logits, T, after, violation.data()));
}

// A solver registered while other threads look solvers up (a plugin loaded beside running
// solves): every lookup sees a whole registry, before or after the insertion.
TEST(ApiErrors, RegistryTakesSolversWhileOthersLookThemUp) {
  SolverRegistry registry;
  SolverInfo base = SolverRegistry::global().info("unrolled");
  const auto factory = [](const OptionValues&) {
    return SolverRegistry::global().create("unrolled");
  };
  registry.add(base, factory);
  constexpr int added = 400;
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      while (!done.load()) {
        const std::vector<std::string> names = registry.names();
        if (names.empty() || !std::is_sorted(names.begin(), names.end())) ++wrong;
        if (!registry.contains("unrolled") || registry.info("unrolled").name != "unrolled" ||
            registry.create("unrolled") == nullptr)
          ++wrong;
      }
    });
  for (int k = 0; k < added; ++k) {
    SolverInfo info = base;
    info.name = "copy_" + std::to_string(k);
    registry.add(info, factory);
  }
  done = true;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(registry.names().size(), std::size_t(added + 1));
}

}  // namespace
}  // namespace sinkgrad::testing
