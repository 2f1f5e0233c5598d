#pragma once
// One run of a study: the forward and the solve in the run's precision on the run's device,
// the gradient compared with the input's references, the solve timed, the residual history
// summarised per iteration and, for CG with iterate_errors, the error of every iterate.

#include "core/solver_registry.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/input_data.hpp"
#include "experiments/study/reference_cache.hpp"
#include "experiments/study/study_log.hpp"
#include "experiments/study/sweep.hpp"

namespace sinkgrad::study {

class Runner {
 public:
  Runner(const StudyDefinition& definition, StudyLog& log)
      : definition_(definition), log_(log), registry_(SolverRegistry::global()) {}

  // The record of `run` on `data` (the input's logits and grad_output in float64); the
  // references are computed or read once per input and kept in `references`.
  RunRecord run(const RunSpec& run, const InputSpec& input, const InputData& data,
                InputReferences& references);

 private:
  template <class Real>
  RunRecord measure(const RunSpec& run, const HostBatch<double>& logits64,
                    const HostBatch<double>& grad_output64, const HostBatch<double>& unrolled,
                    const ConvergedReference& converged);

  const StudyDefinition& definition_;
  StudyLog& log_;
  const SolverRegistry& registry_;
};

}  // namespace sinkgrad::study
