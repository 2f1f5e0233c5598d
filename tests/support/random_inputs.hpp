#pragma once
// Fresh random inputs for every test run. The seed comes from SINKGRAD_TEST_SEED when set
// (to reproduce a failure) and from std::random_device otherwise; it is printed either way.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "core/batch.hpp"
#include "forward/sinkhorn_forward.hpp"

namespace sinkgrad::testing {

inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = 0;
    if (const char* text = std::getenv("SINKGRAD_TEST_SEED"))
      s = std::strtoull(text, nullptr, 10);
    else
      s = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("[ seed     ] SINKGRAD_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// A generator for one test: the run's seed mixed with a per-test salt, recorded in the test's
// output so that a failure can be replayed with SINKGRAD_TEST_SEED.
inline std::mt19937_64 make_rng(std::uint64_t salt = 0) {
  ::testing::Test::RecordProperty("sinkgrad_seed", std::to_string(test_seed()));
  std::seed_seq seq{test_seed(), salt};
  return std::mt19937_64(seq);
}

template <class Real>
HostBatch<Real> uniform_batch(std::mt19937_64& rng, index_t batch, int n, double low, double high) {
  HostBatch<Real> out(batch, n);
  std::uniform_real_distribution<double> dist(low, high);
  for (index_t k = 0; k < out.size(); ++k) out.data()[k] = static_cast<Real>(dist(rng));
  return out;
}

template <class Real>
HostBatch<Real> normal_batch(std::mt19937_64& rng, index_t batch, int n, double scale = 1.0) {
  HostBatch<Real> out(batch, n);
  std::normal_distribution<double> dist(0.0, scale);
  for (index_t k = 0; k < out.size(); ++k) out.data()[k] = static_cast<Real>(dist(rng));
  return out;
}

// Converts a batch to another precision (float64 references for float32 runs and back).
template <class To, class From>
HostBatch<To> convert(const HostBatch<From>& from) {
  HostBatch<To> to(from.batch(), from.n());
  for (index_t k = 0; k < from.size(); ++k) to.data()[k] = static_cast<To>(from.data()[k]);
  return to;
}

// Every matrix of a batch transposed.
template <class Real>
HostBatch<Real> transposed(const HostBatch<Real>& x) {
  HostBatch<Real> t(x.batch(), x.n());
  for (index_t b = 0; b < x.batch(); ++b)
    for (int i = 0; i < x.n(); ++i)
      for (int j = 0; j < x.n(); ++j) t(b, j, i) = x(b, i, j);
  return t;
}

template <class Real>
HostBatch<Real> forward(const HostBatch<Real>& logits, int iterations) {
  HostBatch<Real> R(logits.batch(), logits.n());
  sinkhorn_forward<Real>(logits.view(), iterations, R.view(), nullptr);
  return R;
}

}  // namespace sinkgrad::testing
