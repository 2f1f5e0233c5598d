#include "experiments/study/references.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/solver_registry.hpp"
#include "experiments/study/metrics.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace sinkgrad::study {

HostBatch<double> unrolled_reference(const HostBatch<double>& logits,
                                     const HostBatch<double>& grad_output, int T) {
  const index_t batch = logits.batch();
  const int n = logits.n();
  HostBatch<double> R(batch, n), gradient(batch, n);
  sinkhorn_forward<double>(logits.view(), T, R.view(), nullptr);
  std::vector<SolveStatus> status(static_cast<std::size_t>(batch));
  std::vector<std::int32_t> iterations(static_cast<std::size_t>(batch));
  const auto solver = SolverRegistry::global().create("unrolled");
  solver->solve(BackwardProblem<double>{logits.view(), R.view(), grad_output.view(), T},
                BackwardResult<double>{gradient.view(), status.data(), iterations.data()},
                Device::cpu);
  return gradient;
}

double forward_violation(const HostBatch<double>& logits, int T) {
  HostBatch<double> R(logits.batch(), logits.n());
  std::vector<double> violation(static_cast<std::size_t>(logits.batch()));
  sinkhorn_forward<double>(logits.view(), T, R.view(), violation.data());
  const double worst = finite_max(violation);
  return std::isnan(worst) ? 0.0 : worst;
}

ConvergedReference converged_reference(const HostBatch<double>& logits,
                                       const HostBatch<double>& grad_output, double tolerance,
                                       int max_T) {
  ConvergedReference reference;
  int T = std::min(64, max_T);
  while (true) {
    reference.violation_max = forward_violation(logits, T);
    reference.reached = reference.violation_max < tolerance;
    if (reference.reached || T >= max_T) break;
    T = std::min(2 * T, max_T);
  }
  reference.T = T;
  reference.gradient = unrolled_reference(logits, grad_output, T);
  return reference;
}

}  // namespace sinkgrad::study
