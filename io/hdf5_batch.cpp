#include "io/hdf5_batch.hpp"

#include <limits>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "io/memory_budget.hpp"

namespace sinkgrad::h5 {

ElementType element_type(Precision precision) {
  return precision == Precision::float32 ? ElementType::float32 : ElementType::float64;
}

BatchInfo inspect_batch(const Group& group, const std::string& name) {
  const Dataset dataset = Dataset::open(group, name);
  const DatasetInfo info = dataset.info();
  const std::string expected = ", expected a batch of square matrices of shape (B, n, n)";
  if (info.rank() != 3)
    throw Error(dataset.describe() + " has rank " + std::to_string(info.rank()) + " (shape " +
                info.shape_text() + ")" + expected);
  if (info.shape[1] != info.shape[2])
    throw Error(dataset.describe() + " has shape " + info.shape_text() +
                ": its matrices are not square" + expected);
  if (info.shape[1] == 0)
    throw Error(dataset.describe() + " has shape " + info.shape_text() +
                ": its matrices are empty (n must be >= 1)");
  if (info.shape[1] > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      info.shape[0] > static_cast<std::size_t>(std::numeric_limits<index_t>::max() / 2))
    throw Error(dataset.describe() + " has shape " + info.shape_text() + ", which is too large");
  try {
    limits::check_batch_shape(static_cast<index_t>(info.shape[0]), static_cast<int>(info.shape[1]));
  } catch (const Error& error) {
    throw Error(dataset.describe() + " has shape " + info.shape_text() + ": " + error.what());
  }
  if (info.type != ElementType::float32 && info.type != ElementType::float64)
    throw Error(dataset.describe() + " holds " + info.type_name +
                " elements, expected float32 or float64");
  return {static_cast<index_t>(info.shape[0]), static_cast<int>(info.shape[1]),
          info.type == ElementType::float32 ? Precision::float32 : Precision::float64};
}

template <class Real>
HostBatch<Real> read_batch(const Group& group, const std::string& name) {
  const BatchInfo info = inspect_batch(group, name);
  // The declared shape decides the allocation: refuse it with its size rather than be killed.
  require_memory(MemoryEstimate().batches(1, info.batch, info.n, sizeof(Real)),
                 "reading " + Dataset::open(group, name).describe());
  HostBatch<Real> batch(info.batch, info.n);
  Dataset::open(group, name).read_into(batch.data());
  return batch;
}

template <class Real>
Dataset write_batch(const Group& group, const std::string& name, BatchView<const Real> batch) {
  if (batch.space != MemorySpace::host)
    throw Error("cannot write dataset " + quoted(group.child_path(name)) + " to file " +
                quoted(group.file_path()) + ": the batch is not in host memory");
  const std::size_t n = static_cast<std::size_t>(batch.n);
  return write_dataset<Real>(group, name, {static_cast<std::size_t>(batch.batch), n, n},
                             batch.data);
}

template HostBatch<float> read_batch<float>(const Group&, const std::string&);
template HostBatch<double> read_batch<double>(const Group&, const std::string&);
template Dataset write_batch<float>(const Group&, const std::string&, BatchView<const float>);
template Dataset write_batch<double>(const Group&, const std::string&, BatchView<const double>);

}  // namespace sinkgrad::h5
