#include "core/sinkhorn_forward.hpp"

#include <vector>

#include "core/forward_math.hpp"

namespace sinkgrad {

template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation) {
  if (iterations < 1) throw Error("the forward iteration count T must be >= 1");
  if (logits.batch != R.batch || logits.n != R.n)
    throw Error("forward: logits and R must have the same shape");
  if (logits.space != MemorySpace::host || R.space != MemorySpace::host)
    throw Error("forward on the cpu needs host memory");
  const int n = logits.n;
  index_t invalid = 0;
#pragma omp parallel reduction(+ : invalid)
  {
    std::vector<Real> work(2 * static_cast<std::size_t>(n));
#pragma omp for schedule(static)
    for (index_t b = 0; b < logits.batch; ++b) {
      const bool ok =
          math::sinkhorn_forward_matrix(logits.matrix(b), n, iterations, R.matrix(b), work.data());
      if (!ok) ++invalid;
      if (column_violation != nullptr)
        column_violation[b] = ok ? math::column_violation(R.matrix(b), n) : math::quiet_nan<Real>();
    }
  }
  return invalid;
}

template index_t sinkhorn_forward(BatchView<const float>, int, BatchView<float>, float*);
template index_t sinkhorn_forward(BatchView<const double>, int, BatchView<double>, double*);

}  // namespace sinkgrad
