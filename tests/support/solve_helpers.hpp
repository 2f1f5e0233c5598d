#pragma once
// Running a registered solver on host batches in one call, for tests and benchmarks.

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backward_solver.hpp"
#include "core/batch.hpp"
#include "core/solver_registry.hpp"

namespace sinkgrad::testing {

// A solver name with its options, e.g. {"cg_plain", {{"system", "block"}}}.
struct SolverConfig {
  std::string name;
  std::map<std::string, std::string> options;

  std::string label() const {
    std::string text = name;
    for (const auto& [key, value] : options) text += " " + key + "=" + value;
    return text;
  }
  std::unique_ptr<BackwardSolver> create() const {
    return SolverRegistry::global().create(name, options);
  }
};

// The six solver configurations the library ships.
inline std::vector<SolverConfig> all_solver_configs() {
  return {{"unrolled", {}},
          {"cg_plain", {{"system", "schur"}}},
          {"cg_plain", {{"system", "block"}}},
          {"cg_corrected", {}},
          {"direct", {{"system", "corrected"}}},
          {"direct", {{"system", "plain"}}}};
}

// The implicit ones (everything but unrolled).
inline std::vector<SolverConfig> implicit_solver_configs() {
  auto configs = all_solver_configs();
  configs.erase(configs.begin());
  return configs;
}

template <class Real>
struct Solution {
  HostBatch<Real> grad;
  std::vector<SolveStatus> status;
  std::vector<std::int32_t> iterations;
  std::vector<Real> history;  // B x history_stride when recorded
  int history_stride = 0;
};

// Solves one batch on the CPU. logits may be empty (B = 0 batch) for solvers that do not need
// them; history is recorded when record_history is set.
template <class Real>
Solution<Real> solve(const BackwardSolver& solver, const HostBatch<Real>& logits,
                     const HostBatch<Real>& R, const HostBatch<Real>& G, int T,
                     bool record_history = false, ForwardSpec forward_spec = {}) {
  Solution<Real> out;
  out.grad = HostBatch<Real>(R.batch(), R.n());
  out.status.assign(static_cast<size_t>(R.batch()), SolveStatus::ok);
  out.iterations.assign(static_cast<size_t>(R.batch()), -1);
  BackwardProblem<Real> problem;
  if (logits.batch() == R.batch() && logits.n() == R.n()) problem.logits = logits.view();
  problem.forward_output = R.view();
  problem.grad_output = G.view();
  problem.forward_iterations = T;
  problem.forward = forward_spec;
  BackwardResult<Real> result;
  result.grad_logits = out.grad.view();
  result.status = out.status.data();
  result.iterations = out.iterations.data();
  if (record_history) {
    out.history_stride = solver.history_length(R.n(), precision_of<Real>());
    out.history.assign(static_cast<size_t>(R.batch() * out.history_stride), Real(-12345));
    result.residual_history = out.history.data();
    result.history_stride = out.history_stride;
  }
  solver.solve(problem, result);
  return out;
}

// Whether count Reals are bit for bit the same (NaN equal to a NaN of the same bits).
template <class Real>
bool same_bits(const Real* a, const Real* b, int count) {
  return std::memcmp(a, b, sizeof(Real) * static_cast<std::size_t>(count)) == 0;
}

// One matrix of a batch as a batch of its own.
template <class Real>
HostBatch<Real> single(const HostBatch<Real>& batch, index_t b) {
  HostBatch<Real> out(1, batch.n());
  for (index_t k = 0; k < out.size(); ++k) out.data()[k] = batch.data()[b * out.size() + k];
  return out;
}

}  // namespace sinkgrad::testing
