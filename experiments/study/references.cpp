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
                                     const HostBatch<double>& grad_output, int T,
                                     const ForwardSpec& forward) {
  const index_t batch = logits.batch();
  const int n = logits.n();
  HostBatch<double> R(batch, n), gradient(batch, n);
  sinkhorn_forward<double>(logits.view(), T, R.view(), nullptr, Device::cpu, forward);
  std::vector<SolveStatus> status(static_cast<std::size_t>(batch));
  std::vector<std::int32_t> iterations(static_cast<std::size_t>(batch));
  const auto solver = SolverRegistry::global().create("unrolled");
  solver->solve(BackwardProblem<double>{logits.view(), R.view(), grad_output.view(), T, forward},
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

namespace {

// max |R_T - R_{T/2}| over the batch (NaN entries ignored).
double forward_change(const HostBatch<double>& logits, int T, const ForwardSpec& forward) {
  HostBatch<double> R(logits.batch(), logits.n()), half(logits.batch(), logits.n());
  sinkhorn_forward<double>(logits.view(), T, R.view(), nullptr, Device::cpu, forward);
  sinkhorn_forward<double>(logits.view(), std::max(1, T / 2), half.view(), nullptr, Device::cpu,
                           forward);
  double worst = 0;
  for (index_t k = 0; k < R.size(); ++k) {
    const double change = std::fabs(R.data()[k] - half.data()[k]);
    if (change > worst) worst = change;
  }
  return worst;
}

}  // namespace

ConvergedReference converged_reference(const HostBatch<double>& logits,
                                       const HostBatch<double>& grad_output, double tolerance,
                                       int max_T, const ForwardSpec& forward) {
  ConvergedReference reference;
  int T = std::min(64, max_T);
  while (true) {
    reference.violation_max = is_default_forward(forward) ? forward_violation(logits, T)
                                                          : forward_change(logits, T, forward);
    reference.reached = reference.violation_max < tolerance;
    if (reference.reached || T >= max_T) break;
    T = std::min(2 * T, max_T);
  }
  reference.T = T;
  reference.gradient = unrolled_reference(logits, grad_output, T, forward);
  return reference;
}

}  // namespace sinkgrad::study
