// A plugin that breaks every rule a solver can break, for the tests of sinkgrad's exception
// boundaries and output contract (tests/cli/hardening_test.cpp):
//   hostile_test, option mode:
//     ok                   a valid result (gradient 0, status ok)
//     throw_int            throws an int (not a std::exception)
//     throw_std            throws std::runtime_error
//     nan_ok               NaN gradient with status ok
//     bad_status           status code 7 on matrix 0
//     negative_iterations  iterations -3 on matrix 0
//     writes_nothing       returns without writing anything
//   hostile_null_test: its factory returns null.

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/plugin_abi.hpp"
#include "core/solver_registry.hpp"

namespace {

using namespace sinkgrad;

class Hostile : public BackwardSolver {
 public:
  Hostile(SolverInfo info, OptionValues options)
      : BackwardSolver(std::move(info), std::move(options)), mode_(this->options().text("mode")) {}

 protected:
  void solve_cpu(const BackwardProblem<float>& p, const BackwardResult<float>& r) const override {
    run(p, r);
  }
  void solve_cpu(const BackwardProblem<double>& p, const BackwardResult<double>& r) const override {
    run(p, r);
  }

 private:
  template <class Real>
  void run(const BackwardProblem<Real>& problem, const BackwardResult<Real>& result) const {
    if (mode_ == "throw_int") throw 42;
    if (mode_ == "throw_std") throw std::runtime_error("hostile solver gave up");
    if (mode_ == "writes_nothing") return;
    const Real value = mode_ == "nan_ok" ? std::numeric_limits<Real>::quiet_NaN() : Real(0);
    for (index_t b = 0; b < problem.grad_output.batch; ++b) {
      Real* grad = result.grad_logits.matrix(b);
      for (index_t k = 0; k < index_t(problem.grad_output.n) * problem.grad_output.n; ++k)
        grad[k] = value;
      result.status[b] = SolveStatus::ok;
      result.iterations[b] = 1;
    }
    if (mode_ == "bad_status") result.status[0] = static_cast<SolveStatus>(7);
    if (mode_ == "negative_iterations") result.iterations[0] = -3;
  }

  std::string mode_;
};

void register_solvers(SolverRegistry& registry) {
  const std::vector<Precision> both{Precision::float32, Precision::float64};
  SolverInfo info{"hostile_test",
                  "breaks the solver contract on purpose (tests)",
                  {Device::cpu},
                  both,
                  {OptionSpec::choice("mode",
                                      {"ok", "throw_int", "throw_std", "nan_ok", "bad_status",
                                       "negative_iterations", "writes_nothing"},
                                      "how to misbehave")}};
  registry.add(info, [info](const OptionValues& options) {
    return std::make_unique<Hostile>(info, options);
  });
  SolverInfo null_info{
      "hostile_null_test", "its factory returns null (tests)", {Device::cpu}, both, {}};
  registry.add(null_info, [](const OptionValues&) { return std::unique_ptr<BackwardSolver>(); });
}

}  // namespace

SINKGRAD_PLUGIN(register_solvers);
