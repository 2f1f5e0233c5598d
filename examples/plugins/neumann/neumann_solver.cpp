// `neumann`: a CPU-only sinkgrad solver plugin. The implicit gradient of the plain system
// (r = c = 1 assumed, docs/math.md) with (I - R^T R)^-1 replaced by a truncated Neumann series,
//     beta = sum_{k < K} (R^T R)^k b,   b = s_c - R^T s_r,   alpha = s_r - R beta,
//     dL/dM = R ⊙ (G - alpha 1^T - 1 beta^T),
// each term projected onto the vectors with zero sum: R^T R has the eigenvalue 1 on the ones
// vector at convergence, along which the gradient does not change (alpha + t 1, beta - t 1
// give the same dL/dM), and the series converges on the rest as fast as sigma_2(R)^2 k.
// Load it with `sinkgrad --plugin libneumann.so ...`; it offers no CUDA variant, so it lists
// the CPU only and needs no CUDA compiler even when sinkgrad was built with CUDA.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>

#include "sinkgrad/plugin.hpp"

namespace neumann {

using sinkgrad::MatrixOutcome;
using sinkgrad::SolveStatus;

// One matrix. work: 3 n Reals. history (may be null): the size of each added term.
template <class Real>
MatrixOutcome neumann_matrix(const Real* R, const Real* G, Real* grad, int n, int terms, Real* work,
                             Real* history) {
  if (!sinkgrad::math::all_finite(R, n * n) || !sinkgrad::math::all_finite(G, n * n)) {
    sinkgrad::math::fill(grad, n * n, sinkgrad::math::quiet_nan<Real>());
    return {SolveStatus::invalid_input, 0};
  }
  Real* alpha = work;     // s_r, then alpha
  Real* term = work + n;  // (R^T R)^k b, projected
  Real* beta = work + 2 * n;
  const auto project = [n](Real* v) {  // onto sum(v) = 0
    Real mean = 0;
    for (int j = 0; j < n; ++j) mean += v[j];
    mean /= Real(n);
    for (int j = 0; j < n; ++j) v[j] -= mean;
  };
  for (int i = 0; i < n; ++i) {
    alpha[i] = 0;
    for (int j = 0; j < n; ++j) alpha[i] += R[i * n + j] * G[i * n + j];
  }
  for (int j = 0; j < n; ++j) {  // b = s_c - R^T s_r
    term[j] = 0;
    for (int i = 0; i < n; ++i) term[j] += R[i * n + j] * (G[i * n + j] - alpha[i]);
  }
  project(term);
  for (int j = 0; j < n; ++j) beta[j] = term[j];
  for (int k = 1; k < terms; ++k) {
    Real* Rt = grad;  // R term, n entries of the gradient buffer as scratch
    for (int i = 0; i < n; ++i) {
      Rt[i] = 0;
      for (int j = 0; j < n; ++j) Rt[i] += R[i * n + j] * term[j];
    }
    Real size = 0;
    for (int j = 0; j < n; ++j) {
      term[j] = 0;
      for (int i = 0; i < n; ++i) term[j] += R[i * n + j] * Rt[i];
    }
    project(term);
    for (int j = 0; j < n; ++j) {
      beta[j] += term[j];
      size += term[j] * term[j];
    }
    if (history != nullptr) history[k - 1] = std::sqrt(size);
  }
  for (int i = 0; i < n; ++i) {  // alpha = s_r - R beta
    for (int j = 0; j < n; ++j) alpha[i] -= R[i * n + j] * beta[j];
  }
  bool finite = true;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      grad[i * n + j] = R[i * n + j] * (G[i * n + j] - alpha[i] - beta[j]);
      finite = finite && std::isfinite(grad[i * n + j]);
    }
  if (!finite) {
    sinkgrad::math::fill(grad, n * n, sinkgrad::math::quiet_nan<Real>());
    return {SolveStatus::breakdown, terms};
  }
  return {SolveStatus::ok, terms};
}

class NeumannSolver : public sinkgrad::SolverVariants<NeumannSolver> {
 public:
  using SolverVariants::SolverVariants;

  int terms() const {
    return static_cast<int>(std::min<long long>(options().integer("terms"), 1 << 20));
  }

  // One entry per term after the first.
  int history_length(int /*n*/, sinkgrad::Precision /*precision*/) const override {
    return terms() - 1;
  }

  template <class Real>
  void run_cpu(const sinkgrad::BackwardProblem<Real>& problem,
               const sinkgrad::BackwardResult<Real>& result) const {
    const int n = problem.grad_output.n;
    const int K = terms();
    sinkgrad::solve_each_matrix_on_cpu(
        result, problem.grad_output.batch, 3 * static_cast<std::size_t>(n),
        [&](sinkgrad::index_t b, Real* work, Real* history) {
          return neumann_matrix(problem.forward_output.matrix(b), problem.grad_output.matrix(b),
                                result.grad_logits.matrix(b), n, K, work, history);
        });
  }
  // No run_cuda: SolverVariants then has no CUDA variant to offer.
};

void register_solvers(sinkgrad::SolverRegistry& registry) {
  sinkgrad::SolverInfo info{
      "neumann",
      "implicit gradient of the plain system (r = c = 1 assumed) by a truncated Neumann series "
      "of (I - R^T R)^-1 on the zero-sum vectors (CPU only)",
      {sinkgrad::Device::cpu},
      sinkgrad::both_precisions(),
      {sinkgrad::OptionSpec::integer("terms", "50", "terms of the Neumann series", 1)}};
  registry.add(info, [info](const sinkgrad::OptionValues& options) {
    return std::make_unique<NeumannSolver>(info, options);
  });
}

}  // namespace neumann

SINKGRAD_PLUGIN(neumann::register_solvers);
