#pragma once
// The team-form launches of the CUDA forward (n <= 1024), declared here and compiled in
// forward_cuda_teams_*.cu, one unit per precision, form and shape group, so that a build
// compiles them in parallel (each instantiates its group's team shapes in both orientations).
// Those units are generated in the build tree, one line per template in forward/CMakeLists.txt
// (cmake/instantiations.cmake). Compiled only when the build has CUDA (SINKGRAD_WITH_CUDA).

#include "core/batch.hpp"
#include "core/forward_spec.hpp"
#include "kernels/cuda/shape_group.hpp"

namespace sinkgrad::cuda::forward_detail {

// The seeds' forward (forward/forward_team.hpp) for the n of group G; transposed: on every
// M^T, R stored transposed back (rows_first without eps). Arguments as cuda::sinkhorn_forward's.
template <class Real, ShapeGroup G>
void seeds_forward_group(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, unsigned long long* invalid_count, bool transposed,
                         void* stream);

// A convention's (forward/convention_team.hpp) for the n of group G; transposed as the seeds'
// (forward_plan: when its last step normalises columns).
template <class Real, ShapeGroup G>
void convention_forward_group(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                              Real* column_violation, unsigned long long* invalid_count,
                              const ForwardSpec& forward, bool transposed, void* stream);

template <class Real>
void seeds_forward_teams(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, unsigned long long* invalid_count, bool transposed,
                         void* stream) {
  with_shape_group(logits.n, [&](auto group) {
    seeds_forward_group<Real, decltype(group)::value>(logits, iterations, R, column_violation,
                                                      invalid_count, transposed, stream);
  });
}

template <class Real>
void convention_forward_teams(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                              Real* column_violation, unsigned long long* invalid_count,
                              const ForwardSpec& forward, bool transposed, void* stream) {
  with_shape_group(logits.n, [&](auto group) {
    convention_forward_group<Real, decltype(group)::value>(
        logits, iterations, R, column_violation, invalid_count, forward, transposed, stream);
  });
}

}  // namespace sinkgrad::cuda::forward_detail
