// math::reciprocal_in_range on the GPU against the IEEE division 1 / x on the same device, over
// random x across the range it is documented for: the same bits in float (it is the division's
// own fast path), within one unit in the last place in double. Skipped without a GPU.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/host_device.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "tests/cuda/gpu_required.hpp"

namespace sinkgrad::testing {
namespace {

template <class Real>
__global__ void reciprocals(const Real* x, Real* fast, Real* divided, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  fast[i] = math::reciprocal_in_range(x[i]);
  divided[i] = Real(1) / x[i];
}

// Random x = +-m 2^e, m uniform in [1, 2), e uniform in [-max_exponent, max_exponent].
template <class Real>
std::vector<Real> random_inputs(int count, int max_exponent) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-max_exponent, max_exponent);
  std::vector<Real> x(static_cast<std::size_t>(count));
  for (auto& v : x) v = Real(std::ldexp(mantissa(rng), exponent(rng)) * (rng() % 2 ? 1 : -1));
  x[0] = Real(1);
  x[1] = Real(3);
  return x;
}

template <class Real, class Bits>
Bits distance_in_ulps(Real a, Real b) {
  Bits ia, ib;
  std::memcpy(&ia, &a, sizeof(a));
  std::memcpy(&ib, &b, sizeof(b));
  return ia > ib ? ia - ib : ib - ia;
}

template <class Real, class Bits>
void check(int max_exponent, Bits allowed_ulps) {
  const int count = 1 << 20;
  const std::vector<Real> x = random_inputs<Real>(count, max_exponent);
  const std::size_t bytes = x.size() * sizeof(Real);
  cuda::DeviceBuffer dx(bytes), dfast(bytes), ddivided(bytes);
  cuda::copy_to_device(dx.data(), x.data(), bytes);
  reciprocals<Real>
      <<<(count + 255) / 256, 256>>>(dx.as<Real>(), dfast.as<Real>(), ddivided.as<Real>(), count);
  SINKGRAD_CUDA_CHECK_LAUNCH("the reciprocal test kernel");
  cuda::synchronize("the reciprocal test");
  std::vector<Real> fast(x.size()), divided(x.size());
  cuda::copy_to_host(fast.data(), dfast.data(), bytes);
  cuda::copy_to_host(divided.data(), ddivided.data(), bytes);
  Bits worst = 0;
  int differing = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Bits d = distance_in_ulps<Real, Bits>(fast[i], divided[i]);
    if (d > worst) worst = d;
    if (d != 0) ++differing;
    if (d > allowed_ulps) {
      ADD_FAILURE() << "x = " << x[i] << ": " << fast[i] << " against 1 / x = " << divided[i];
      return;
    }
  }
  std::printf(
      "[ reciprocal ] %zu-byte reals, |log2 x| <= %d: %d of %d differ from 1 / x, by "
      "at most %llu ulp\n",
      sizeof(Real), max_exponent, differing, count, static_cast<unsigned long long>(worst));
}

TEST(ReciprocalInRange, FloatHasTheBitsOfTheDivision) {
  SINKGRAD_REQUIRE_GPU();
  check<float, std::uint32_t>(125, 0);
}

TEST(ReciprocalInRange, DoubleIsWithinOneUlp) {
  SINKGRAD_REQUIRE_GPU();
  check<double, std::uint64_t>(1000, 1);
}

}  // namespace
}  // namespace sinkgrad::testing
