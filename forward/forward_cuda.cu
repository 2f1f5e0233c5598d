// CUDA batch driver of the Sinkhorn forward, in the form forward_plan chooses
// (forward/forward_form.hpp): for n <= 1024 the team launches of forward_cuda_teams.hpp (the
// seeds' forward, on the transposed tiles for rows_first without eps; the other conventions
// in convention_team.hpp's form), above that one thread per matrix (log_domain.hpp for the
// default, convention_forward.hpp for the others).

#include "forward/convention_forward.hpp"
#include "forward/forward_cuda.hpp"
#include "forward/forward_cuda_teams.hpp"
#include "forward/forward_form.hpp"
#include "forward/log_domain.hpp"
#include "kernels/cuda/block_team.cuh"
#include "kernels/cuda/per_matrix_launch.cuh"
#include "kernels/team.hpp"

namespace sinkgrad::cuda {
namespace {

template <class Real>
__global__ void forward_kernel(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                               Real* column_violation, unsigned long long* invalid_count,
                               std::size_t stride) {
  extern __shared__ __align__(16) unsigned char shared_workspace[];
  Real* work = reinterpret_cast<Real*>(shared_workspace) + threadIdx.x * stride;
  const int n = logits.n;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < logits.batch; b += step) {
    const bool ok =
        math::sinkhorn_forward_matrix(logits.matrix(b), n, iterations, R.matrix(b), work);
    if (!ok && invalid_count != nullptr) atomicAdd(invalid_count, 1ULL);
    if (column_violation != nullptr)
      column_violation[b] = ok ? math::column_violation(R.matrix(b), n) : math::quiet_nan<Real>();
  }
}

template <class Real>
__global__ void convention_forward_kernel(math::ConventionForward<Real> convention,
                                          BatchView<const Real> logits, int iterations,
                                          BatchView<Real> R, Real* column_violation,
                                          unsigned long long* invalid_count, std::size_t stride) {
  extern __shared__ __align__(16) unsigned char shared_workspace[];
  Real* work = reinterpret_cast<Real*>(shared_workspace) + threadIdx.x * stride;
  const int n = logits.n;
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t b = index_t(blockIdx.x) * blockDim.x + threadIdx.x; b < logits.batch; b += step) {
    const bool ok = math::convention_forward_matrix(convention, logits.matrix(b), n, iterations,
                                                    R.matrix(b), work);
    if (!ok && invalid_count != nullptr) atomicAdd(invalid_count, 1ULL);
    if (column_violation != nullptr)
      column_violation[b] = ok ? math::marginal_violation(R.matrix(b), n, !convention.rows_first)
                               : math::quiet_nan<Real>();
  }
}

}  // namespace

template <class Real>
void convention_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                        Real* column_violation, unsigned long long* invalid_count,
                        const ForwardSpec& forward, void* stream) {
  if (iterations < 1) throw Error("the forward iteration count T must be >= 1");
  if (logits.batch != R.batch || logits.n != R.n)
    throw Error("forward: logits and R must have the same shape");
  if (logits.batch == 0) return;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const ForwardPlan plan = forward_plan(forward, logits.n, max_block_team_n);
  switch (plan.form) {
    case ForwardForm::seeds_team:
      return forward_detail::seeds_forward_teams(logits, iterations, R, column_violation,
                                                 invalid_count, plan.transposed, stream);
    case ForwardForm::convention_team:
      return forward_detail::convention_forward_teams(
          logits, iterations, R, column_violation, invalid_count, forward, plan.transposed, stream);
    case ForwardForm::seeds_matrix: {
      const std::size_t stride = detail::padded_workspace(2 * static_cast<std::size_t>(logits.n));
      auto kernel = &forward_kernel<Real>;
      const detail::LaunchShape shape =
          detail::plan_launch(kernel, logits.batch, stride * sizeof(Real));
      kernel<<<shape.blocks, shape.threads, shape.shared_bytes, cuda_stream>>>(
          logits, iterations, R, column_violation, invalid_count, stride);
      SINKGRAD_CUDA_CHECK_LAUNCH("the Sinkhorn forward kernel");
      return;
    }
    case ForwardForm::convention_matrix: {
      const std::size_t stride = detail::padded_workspace(
          static_cast<std::size_t>(math::convention_forward_workspace(logits.n)));
      auto kernel = &convention_forward_kernel<Real>;
      const detail::LaunchShape shape =
          detail::plan_launch(kernel, logits.batch, stride * sizeof(Real));
      kernel<<<shape.blocks, shape.threads, shape.shared_bytes, cuda_stream>>>(
          math::convention_forward<Real>(forward), logits, iterations, R, column_violation,
          invalid_count, stride);
      SINKGRAD_CUDA_CHECK_LAUNCH("the Sinkhorn forward kernel of a convention");
      return;
    }
  }
}

template void convention_forward(BatchView<const float>, int, BatchView<float>, float*,
                                 unsigned long long*, const ForwardSpec&, void*);
template void convention_forward(BatchView<const double>, int, BatchView<double>, double*,
                                 unsigned long long*, const ForwardSpec&, void*);

template <class Real>
void sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                      Real* column_violation, unsigned long long* invalid_count,
                      void* stream_handle) {
  convention_forward(logits, iterations, R, column_violation, invalid_count, ForwardSpec{},
                     stream_handle);
}

template void sinkhorn_forward(BatchView<const float>, int, BatchView<float>, float*,
                               unsigned long long*, void*);
template void sinkhorn_forward(BatchView<const double>, int, BatchView<double>, double*,
                               unsigned long long*, void*);

}  // namespace sinkgrad::cuda
