#pragma once
// Batches of square matrices as 3-D datasets of shape (B, n, n), float32 or float64, in the
// library's row-major [B][n][n] layout (core/batch.hpp), so a dataset maps 1:1 onto a HostBatch.
//
//   h5::BatchInfo info = h5::inspect_batch(file, "logits");      // B, n, stored precision
//   HostBatch<double> M = h5::read_batch<double>(file, "logits"); // converts float32 if needed
//   h5::write_batch<float>(out, "grad_logits", dM.view());
//
// Every check names the file and the dataset: missing dataset, rank other than 3, matrices
// that are not square or empty (n = 0), element types other than float32 / float64.

#include <string>

#include "core/batch.hpp"
#include "core/types.hpp"
#include "io/hdf5_dataset.hpp"

namespace sinkgrad::h5 {

struct BatchInfo {
  index_t batch = 0;
  int n = 0;
  Precision precision = Precision::float64;  // as stored in the file
};

// Checks that `name` is a (B, n, n) float32 / float64 dataset and returns its shape and type.
BatchInfo inspect_batch(const Group& group, const std::string& name);

template <class Real>
HostBatch<Real> read_batch(const Group& group, const std::string& name);

// Stores the batch as a (B, n, n) dataset of Real (host memory only).
template <class Real>
Dataset write_batch(const Group& group, const std::string& name, BatchView<const Real> batch);

ElementType element_type(Precision precision);

}  // namespace sinkgrad::h5
