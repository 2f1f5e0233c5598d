// One instantiation of forward/forward_cuda_teams.cuh (a unit of its own: see its header).
#include "forward/forward_cuda_teams.cuh"

namespace sinkgrad::cuda::forward_detail {
template void convention_forward_teams(BatchView<const float>, int, BatchView<float>, float*,
                                       unsigned long long*, const ForwardSpec&, void*);
}  // namespace sinkgrad::cuda::forward_detail
