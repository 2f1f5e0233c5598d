#pragma once
// The team-form launches of the CUDA forward (n <= 1024), declared here and compiled in
// forward_cuda_teams_*.cu, one unit per precision and form, so that a build compiles them in
// parallel (each instantiates every team shape in both orientations). Those units are generated
// in the build tree, one line per template in forward/CMakeLists.txt (cmake/instantiations.cmake).
// Compiled only when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/batch.hpp"
#include "core/forward_spec.hpp"

namespace sinkgrad::cuda::forward_detail {

// The seeds' forward (forward/forward_team.hpp); transposed: on every M^T, R stored transposed
// back (rows_first without eps). Arguments as cuda::sinkhorn_forward's.
template <class Real>
void seeds_forward_teams(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, unsigned long long* invalid_count, bool transposed,
                         void* stream);

// A convention's (forward/convention_team.hpp), transposed when its last step normalises columns.
template <class Real>
void convention_forward_teams(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                              Real* column_violation, unsigned long long* invalid_count,
                              const ForwardSpec& forward, void* stream);

}  // namespace sinkgrad::cuda::forward_detail
