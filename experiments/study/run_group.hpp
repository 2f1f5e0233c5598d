#pragma once
// One run's group in the study log (schema: docs/experiments.md): parameters, results and
// arrays, with `complete` = 1 written last. StudyLog::write_run calls it and commits.

#include "experiments/study/study_log.hpp"

namespace sinkgrad::study {

// Writes runs/<run.id> (replacing a failed attempt of the same run).
void write_run_group(const h5::Group& runs, const RunSpec& run, const InputSpec& input,
                     const RunRecord& record);

}  // namespace sinkgrad::study
