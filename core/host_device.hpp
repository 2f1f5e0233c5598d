#pragma once
// Marks functions that are compiled for both the CPU and the GPU, so that the per-matrix
// mathematics exists once and the CPU and CUDA variants cannot drift apart.

#include <cmath>

#if defined(__CUDACC__)
#define SINKGRAD_HD __host__ __device__ __forceinline__
// A rarely taken path kept out of line on the GPU, so that its registers do not count against
// the hot path it branches from (the kernel gets the larger of the two, not their union).
#define SINKGRAD_HD_OUT_OF_LINE __host__ __device__ __noinline__
#else
#define SINKGRAD_HD inline
#define SINKGRAD_HD_OUT_OF_LINE inline
#endif

// Loop unrolling on the GPU only (a loop over a team's registers must unroll to stay in them).
#if defined(__CUDA_ARCH__)
#define SINKGRAD_UNROLL _Pragma("unroll")
#define SINKGRAD_UNROLL_8 _Pragma("unroll 8")
#define SINKGRAD_NO_UNROLL _Pragma("unroll 1")
#else
#define SINKGRAD_UNROLL
#define SINKGRAD_UNROLL_8
#define SINKGRAD_NO_UNROLL
#endif

namespace sinkgrad::math {

// Overloads that resolve to the same libm / CUDA math functions on host and device.
SINKGRAD_HD float exp_of(float x) {
  return ::expf(x);
}
SINKGRAD_HD double exp_of(double x) {
  return ::exp(x);
}
SINKGRAD_HD float log_of(float x) {
  return ::logf(x);
}
SINKGRAD_HD double log_of(double x) {
  return ::log(x);
}
SINKGRAD_HD float log1p_of(float x) {
  return ::log1pf(x);
}
SINKGRAD_HD double log1p_of(double x) {
  return ::log1p(x);
}
SINKGRAD_HD float expm1_of(float x) {
  return ::expm1f(x);
}
SINKGRAD_HD double expm1_of(double x) {
  return ::expm1(x);
}
SINKGRAD_HD float sqrt_of(float x) {
  return ::sqrtf(x);
}
SINKGRAD_HD double sqrt_of(double x) {
  return ::sqrt(x);
}
SINKGRAD_HD float abs_of(float x) {
  return ::fabsf(x);
}
SINKGRAD_HD double abs_of(double x) {
  return ::fabs(x);
}

// a * b + c rounded once. The algorithms that must give the same bits on both devices (the CG
// solvers: built without implicit contraction, kernels/CMakeLists.txt) call it where they
// multiply and add, so that the GPU does one instruction there instead of two; on the CPU
// std::fma is one instruction where the build enables it (SINKGRAD_HOST_FMA), else a libm call,
// correctly rounded either way.
SINKGRAD_HD float fma_of(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
SINKGRAD_HD double fma_of(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// 1/x for x of moderate magnitude (normal, |x| < 2^126 in float, 2^1022 in double). On the GPU
// one approximate reciprocal and Newton steps, without the IEEE division's test and branch for
// the out-of-range cases; in float the result has the same bits as 1/x (it is the division's
// own fast path), in double it is within one unit in the last place. The Sinkhorn scaling
// vectors of the linear domain never leave that range (forward/forward_team.hpp).
SINKGRAD_HD float reciprocal_in_range(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return __fmaf_rn(r, __fmaf_rn(-x, r, 1.0f), r);
#else
  return 1.0f / x;
#endif
}
SINKGRAD_HD double reciprocal_in_range(double x) {
#if defined(__CUDA_ARCH__)
  double r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
  double e = __fma_rn(-x, r, 1.0);
  r = __fma_rn(r, __fma_rn(e, e, e), r);  // one step of third order
  return __fma_rn(r, __fma_rn(-x, r, 1.0), r);
#else
  return 1.0 / x;
#endif
}

template <class Real>
SINKGRAD_HD bool is_finite(Real x) {
#if defined(__CUDA_ARCH__)
  return ::isfinite(x);
#else
  return std::isfinite(x);
#endif
}

template <class Real>
SINKGRAD_HD Real max_of(Real a, Real b) {
  return a > b ? a : b;
}

// The sum of value(0 .. n) as `width` lanes add it (a power of two <= 32), on one thread: lane l
// adds value(l), value(l + width), ... ascending to 0, then the lane sums combine pairwise,
// distance width / 2 first, down to 1, as a butterfly of exchanges leaves it on every lane. The
// GPU's order, reproduced where the CPU must give its bits (kernels/team.hpp's canonical sum,
// core/log_base_chain.hpp's rows).
template <class Real, class Value>
SINKGRAD_HD Real lane_order_sum(int n, int width, const Value& value) {
  Real lane[32];
  for (int l = 0; l < width; ++l) {
    Real partial = 0;
    for (int i = l; i < n; i += width) partial += value(i);
    lane[l] = partial;
  }
  for (int distance = width / 2; distance > 0; distance /= 2)
    for (int l = 0; l < distance; ++l) lane[l] = lane[l] + lane[l + distance];
  return lane[0];
}

template <class Real>
SINKGRAD_HD Real quiet_nan() {
  return Real(0) / Real(0);  // std::numeric_limits is not usable in device code
}

template <class Real>
SINKGRAD_HD Real infinity() {
  return Real(1) / Real(0);
}

// 2^-e for the exponent e of x, e no smaller than the least exponent whose 2^-e is finite: the
// power of two that brings x to [1, 2), or as near as it can; 1 for x = 0 or not finite, which
// have no scale. Multiplying by it changes no bits but the exponent while nothing leaves the
// normal range.
SINKGRAD_HD float unit_scale(float x) {
  if (!(x > 0.0f) || !is_finite(x)) return 1.0f;
  const int e = ::ilogbf(x);
  return ::ldexpf(1.0f, e < -126 ? 126 : -e);
}
SINKGRAD_HD double unit_scale(double x) {
  if (!(x > 0.0) || !is_finite(x)) return 1.0;
  const int e = ::ilogb(x);
  return ::ldexp(1.0, e < -1022 ? 1022 : -e);
}

template <class Real>
struct Epsilon;
template <>
struct Epsilon<float> {
  static constexpr float value = 1.1920928955078125e-07f;
};
template <>
struct Epsilon<double> {
  static constexpr double value = 2.220446049250313e-16;
};

}  // namespace sinkgrad::math
