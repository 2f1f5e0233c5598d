#pragma once
// The exact fallback on the caller's arrays, shared by sinkgrad_replace_failures and the one-call
// backward of sinkgrad_c.cpp.

#include <cstdint>

#include "core/forward_spec.hpp"
#include "core/types.hpp"

namespace sinkgrad::capi {

// Every matrix whose status is not a success (ok, fallback) gets the unrolled solver's gradient
// in grad, computed for those matrices only; status is read, not written. On cuda the arrays are
// device memory and the work runs on `stream`, waited for when `wait`.
template <class Real>
void replace_failures(Device device, std::int64_t batch, int n, int T, const void* logits,
                      const void* G, void* grad, const std::int32_t* status,
                      const ForwardSpec& spec, void* stream, bool wait);

}  // namespace sinkgrad::capi
