#pragma once
// The error of every CG iterate's gradient against a run's two references (the unrolled one
// and the converged one), summarised per iteration count k as the median over the batch: the
// gradient a solve stopped after k iterations returns.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/backward_problem.hpp"
#include "core/solver_registry.hpp"
#include "experiments/study/study_log.hpp"
#include "experiments/study/sweep.hpp"

namespace sinkgrad::study {

// The iterates of the measured solve itself, from a solver that reports them
// (BackwardSolver::reports_iterates): pass it as BackwardResult::iterates, then summarise.
template <class Real>
class IterateErrors final : public IterateSink<Real> {
 public:
  // It keeps two errors per matrix and iteration: K x B of them. Above this many bytes a run
  // scores its iterates by re-solving instead (slower, but in the memory of one solve).
  static constexpr std::size_t max_bytes = std::size_t(256) << 20;
  static bool fits(int K, index_t batch) {
    return K > 0 && batch > 0 &&
           static_cast<double>(K) * static_cast<double>(batch) * 2 * sizeof(double) <=
               static_cast<double>(max_bytes);
  }

  // K: the most iterations a matrix may take (the solve's history length - 1).
  IterateErrors(int K, const HostBatch<double>& unrolled, const HostBatch<double>& converged);
  void gradient(index_t b, int k, const Real* g) override;
  // k = 1 .. used into the record: a matrix that stopped after iterations[b] < k (converged,
  // broke down or never started) counts with its final gradient, as a solve stopped at k
  // would return it.
  void summarise(BatchView<const Real> final_gradient, const std::int32_t* iterations, int used,
                 RunRecord& record) const;

 private:
  std::size_t at(int k, index_t b) const {
    return static_cast<std::size_t>(k - 1) * static_cast<std::size_t>(batch_) +
           static_cast<std::size_t>(b);
  }
  int K_;
  index_t batch_;
  index_t size_;
  const HostBatch<double>& unrolled_;
  const HostBatch<double>& converged_;
  std::vector<double> vs_unrolled_, vs_converged_;  // [k - 1][b]
};

// The same for a solver that does not report its iterates (a plugin with a max_iterations
// option): CG from zero is deterministic, so a solve with max_iterations = k returns the
// measured solve's k-th iterate; one solve per k = 1 .. K.
template <class Real>
void iterate_errors_by_resolving(const SolverRegistry& registry, const RunSpec& run,
                                 const BackwardProblem<Real>& problem, int K,
                                 const HostBatch<double>& unrolled,
                                 const HostBatch<double>& converged, RunRecord& record);

}  // namespace sinkgrad::study
