#pragma once
// The references of one input (the unrolled gradient per T, the converged gradient), each
// computed once per precision and forward: read from the log when a resumed study stored it,
// otherwise computed and stored there.

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/batch.hpp"
#include "core/types.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/input_data.hpp"
#include "experiments/study/references.hpp"
#include "experiments/study/study_log.hpp"
#include "experiments/study/sweep.hpp"

namespace sinkgrad::study {

// The references of the input in hand, keyed by precision, forward_key(forward) (and T).
struct InputReferences {
  std::map<std::tuple<Precision, std::string, int>, HostBatch<double>> unrolled;
  std::map<std::pair<Precision, std::string>, ConvergedReference> converged;
};

// The unrolled gradient of the run's precision, forward and T; logits and grad_output are the
// input rounded to the run's precision.
const HostBatch<double>& unrolled_reference_for(StudyLog& log, const RunSpec& run,
                                                const InputSpec& input,
                                                const HostBatch<double>& logits,
                                                const HostBatch<double>& grad_output,
                                                InputReferences& references);

// The converged gradient of the run's precision and forward, with the definition's tolerance
// and iteration cap.
const ConvergedReference& converged_reference_for(StudyLog& log, const StudyDefinition& definition,
                                                  const RunSpec& run, const InputSpec& input,
                                                  const HostBatch<double>& logits,
                                                  const HostBatch<double>& grad_output,
                                                  InputReferences& references);

}  // namespace sinkgrad::study
