#pragma once
// A subset of a batch chosen by its statuses, in device memory: a launch given one runs only the
// matrices it selects (every status but ok, or every status that is not a success), reading the
// statuses on the device, so that a pass over the few matrices that need it (the exact fallback
// of failed implicit solves) neither waits for the GPU to count them nor stores the others.
// With mark, a selected matrix that the launch solves is stored as fallback instead of ok. A
// launch given none runs every matrix.

#include "core/host_device.hpp"
#include "core/status.hpp"
#include "core/types.hpp"

namespace sinkgrad::cuda {

struct MatrixSubset {
  const SolveStatus* status = nullptr;  // device memory; null: the whole batch
  // true: select every status but ok, and store ok as fallback; false: select every status that
  // is not a success.
  bool mark = false;

  SINKGRAD_HD bool whole() const { return status == nullptr; }
  SINKGRAD_HD bool selects(index_t b) const {
    return whole() || (mark ? status[b] != SolveStatus::ok : !is_success(status[b]));
  }
  SINKGRAD_HD SolveStatus stored(SolveStatus solved) const {
    return mark && solved == SolveStatus::ok ? SolveStatus::fallback : solved;
  }
};

}  // namespace sinkgrad::cuda
