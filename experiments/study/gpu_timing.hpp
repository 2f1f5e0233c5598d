#pragma once
// The GPU timing of a study run: CUDA events around solves of device-resident data.

#include <vector>

#include "core/backward_problem.hpp"
#include "core/backward_solver.hpp"

namespace sinkgrad::study {

#if defined(SINKGRAD_WITH_CUDA)
// Seconds of each of `repeats` solves of the problem on the GPU, timed with CUDA events around
// the solve of device-resident data (the copies to and from the GPU are not timed), after one
// untimed warm-up solve. Real: float or double.
template <class Real>
std::vector<double> time_on_gpu(const BackwardSolver& solver, const BackwardProblem<Real>& host,
                                int repeats);
#endif

}  // namespace sinkgrad::study
