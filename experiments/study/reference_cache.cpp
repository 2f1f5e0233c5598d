#include "experiments/study/reference_cache.hpp"

#include <optional>

namespace sinkgrad::study {

const HostBatch<double>& unrolled_reference_for(StudyLog& log, const RunSpec& run,
                                                const InputSpec& input,
                                                const HostBatch<double>& logits,
                                                const HostBatch<double>& grad_output,
                                                InputReferences& references) {
  const std::string forward = forward_key(run.forward);
  const auto key = std::make_tuple(run.precision, forward, run.T);
  auto found = references.unrolled.find(key);
  if (found != references.unrolled.end()) return found->second;
  std::optional<HostBatch<double>> stored =
      log.read_unrolled_reference(input, run.precision, run.T, forward);
  if (!stored) {
    stored = unrolled_reference(logits, grad_output, run.T, run.forward);
    log.write_unrolled_reference(input, run.precision, run.T, forward, *stored);
  }
  return references.unrolled.emplace(key, std::move(*stored)).first->second;
}

const ConvergedReference& converged_reference_for(StudyLog& log, const StudyDefinition& definition,
                                                  const RunSpec& run, const InputSpec& input,
                                                  const HostBatch<double>& logits,
                                                  const HostBatch<double>& grad_output,
                                                  InputReferences& references) {
  const std::string forward = forward_key(run.forward);
  const auto key = std::make_pair(run.precision, forward);
  auto found = references.converged.find(key);
  if (found != references.converged.end()) return found->second;
  std::optional<ConvergedReference> stored =
      log.read_converged_reference(input, run.precision, forward);
  if (!stored) {
    stored = converged_reference(logits, grad_output, definition.converged_tolerance,
                                 definition.converged_max_iterations, run.forward);
    log.write_converged_reference(input, run.precision, forward, *stored);
  }
  return references.converged.emplace(key, std::move(*stored)).first->second;
}

}  // namespace sinkgrad::study
