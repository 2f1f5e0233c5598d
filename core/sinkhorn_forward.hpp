#pragma once
// Batched Sinkhorn forward (see forward_math.hpp for the convention and the log-domain form).

#include "core/batch.hpp"

namespace sinkgrad {

// R = Sinkhorn_T(exp(logits)) for every matrix; column_violation[b] = max_j |c_j - 1| (NaN for
// a matrix whose logits are not finite; its R is NaN too). Returns the number of such matrices.
// logits, R and column_violation must be host memory; see kernels/ for the CUDA variant.
template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation);

}  // namespace sinkgrad
