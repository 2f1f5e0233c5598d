#include "experiments/study/input_data.hpp"

#include <cmath>
#include <numeric>
#include <vector>

#include "io/hdf5.hpp"

namespace sinkgrad::study {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully specified.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one value per call, the partner is dropped for simplicity).
  double normal() {
    const double u = 1.0 - uniform();  // (0, 1]
    const double v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
  }
  std::uint64_t below(std::uint64_t bound) { return next() % bound; }

 private:
  std::uint64_t state_;
};

HostBatch<double> generated_logits(const InputSpec& input) {
  const LogitSource& source = input.logits;
  HostBatch<double> M(input.batch, input.n);
  SplitMix64 rng(key_hash(input.key + " logits"));
  switch (source.kind) {
    case LogitSource::Kind::uniform:
      for (index_t k = 0; k < M.size(); ++k)
        M.data()[k] = source.first + (source.second - source.first) * rng.uniform();
      break;
    case LogitSource::Kind::normal:
      for (index_t k = 0; k < M.size(); ++k) M.data()[k] = source.first * rng.normal();
      break;
    case LogitSource::Kind::near_permutation: {
      std::vector<int> pi(static_cast<std::size_t>(input.n));
      for (index_t b = 0; b < M.batch(); ++b) {
        std::iota(pi.begin(), pi.end(), 0);
        for (int i = input.n - 1; i > 0; --i)
          std::swap(pi[static_cast<std::size_t>(i)],
                    pi[rng.below(static_cast<std::uint64_t>(i) + 1)]);
        for (int i = 0; i < input.n; ++i)
          for (int j = 0; j < input.n; ++j)
            M(b, i, j) = (pi[static_cast<std::size_t>(i)] == j ? source.first : 0.0) +
                         source.second * rng.normal();
      }
      break;
    }
    case LogitSource::Kind::file:
      break;
  }
  return M;
}

HostBatch<double> file_logits(const InputSpec& input) {
  const h5::File file = h5::File::open(input.logits.path);
  const HostBatch<double> all = h5::read_batch<double>(file, input.logits.dataset);
  HostBatch<double> M(input.batch, input.n);
  std::copy(all.data(), all.data() + M.size(), M.data());
  return M;
}

}  // namespace

InputData make_input_data(const InputSpec& input) {
  InputData data{input.logits.from_file() ? file_logits(input) : generated_logits(input),
                 HostBatch<double>(input.batch, input.n)};
  SplitMix64 rng(key_hash(input.key + " grad_output"));
  for (index_t k = 0; k < data.grad_output.size(); ++k) data.grad_output.data()[k] = rng.normal();
  return data;
}

HostBatch<double> rounded_to(Precision precision, const HostBatch<double>& batch) {
  HostBatch<double> out = batch;
  if (precision == Precision::float32)
    for (index_t k = 0; k < out.size(); ++k)
      out.data()[k] = static_cast<double>(static_cast<float>(out.data()[k]));
  return out;
}

template <class Real>
HostBatch<Real> converted(const HostBatch<double>& batch) {
  HostBatch<Real> out(batch.batch(), batch.n());
  for (index_t k = 0; k < out.size(); ++k) out.data()[k] = static_cast<Real>(batch.data()[k]);
  return out;
}

template HostBatch<float> converted(const HostBatch<double>&);
template HostBatch<double> converted(const HostBatch<double>&);

}  // namespace sinkgrad::study
