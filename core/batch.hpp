#pragma once
// Batched storage of B square matrices, n x n each, row-major [B][n][n], contiguous:
// element (b, i, j) lives at data[(b * n + i) * n + j].

#include <vector>

#include "core/error.hpp"
#include "core/host_device.hpp"
#include "core/types.hpp"

namespace sinkgrad {

template <class Real>
struct BatchView {
  Real* data = nullptr;
  index_t batch = 0;
  int n = 0;
  MemorySpace space = MemorySpace::host;

  SINKGRAD_HD index_t matrix_size() const { return index_t(n) * n; }
  SINKGRAD_HD index_t size() const { return batch * matrix_size(); }
  SINKGRAD_HD Real* matrix(index_t b) const { return data + b * matrix_size(); }

  // A view is implicitly a read-only view of the same memory.
  operator BatchView<const Real>() const { return {data, batch, n, space}; }
};

// Owns host memory for a batch; hands out views.
template <class Real>
class HostBatch {
 public:
  HostBatch() = default;
  HostBatch(index_t batch, int n, Real fill = Real(0)) : batch_(batch), n_(n) {
    if (batch < 0 || n < 1) throw Error("a batch needs B >= 0 and n >= 1");
    storage_.assign(static_cast<size_t>(batch * index_t(n) * n), fill);
  }

  BatchView<Real> view() { return {storage_.data(), batch_, n_, MemorySpace::host}; }
  BatchView<const Real> view() const { return {storage_.data(), batch_, n_, MemorySpace::host}; }

  Real* data() { return storage_.data(); }
  const Real* data() const { return storage_.data(); }
  index_t batch() const { return batch_; }
  int n() const { return n_; }
  index_t size() const { return static_cast<index_t>(storage_.size()); }
  Real& operator()(index_t b, int i, int j) { return storage_[(b * n_ + i) * n_ + j]; }
  const Real& operator()(index_t b, int i, int j) const { return storage_[(b * n_ + i) * n_ + j]; }

 private:
  index_t batch_ = 0;
  int n_ = 0;
  std::vector<Real> storage_;
};

}  // namespace sinkgrad
