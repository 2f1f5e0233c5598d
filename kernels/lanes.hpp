#pragma once
// W matrices in lockstep, one per SIMD lane: a Real whose every operation acts on W independent
// values, for the CPU teams of kernels/team.hpp. A team whose Real is Lanes<Real, W> runs an
// algorithm's text unchanged on W matrices at once (CpuTeam<Lanes<Real, W>, n, n>); every lane
// sees the operations, in the order, and so the bits, of the scalar team on its own matrix
// (each operator is IEEE per lane, fma_of rounds once per lane; the build contracts nothing,
// CMakeLists.txt). GCC turns the fixed-length loops below into one vector instruction each
// (AVX with -mfma: 8 float or 4 double lanes in a 256-bit register).
//
// Only the arithmetic of straight-line code is lane-wise: a branch on a value (a finiteness test,
// the linear domain's spread test) has no Lanes form, so a driver takes those decisions per
// matrix with the scalar team and runs the straight-line part on the lanes
// (solvers/unrolled/unrolled_lanes.hpp). The few tests below that have one answer for all lanes
// say which; a driver that reaches them takes each lane's decision again itself
// (solvers/direct/direct_lanes.hpp).

#include <type_traits>

#include "core/host_device.hpp"

#if defined(__FMA__) || defined(__AVX__)
#include <immintrin.h>
#endif

namespace sinkgrad::math {

template <class Real, int W>
struct Lanes {
  // GCC's vector extension: + - * / are one instruction each, v[w] reads and writes a lane.
  typedef Real Vector __attribute__((vector_size(sizeof(Real) * W)));
  Vector v;

  Lanes() = default;
  Lanes(Real x) : v(Vector{} + x) {}  // NOLINT(google-explicit-constructor): the texts' 0, 1
  // The texts' Real(n), Real(s.i): the conversion of the scalar form, made explicit.
  template <class Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
  explicit Lanes(Int x) : Lanes(static_cast<Real>(x)) {}

  Lanes& operator+=(const Lanes& o) {
    v += o.v;
    return *this;
  }
  Lanes& operator-=(const Lanes& o) {
    v -= o.v;
    return *this;
  }
  Lanes& operator*=(const Lanes& o) {
    v *= o.v;
    return *this;
  }
  Lanes& operator/=(const Lanes& o) {
    v /= o.v;
    return *this;
  }
  friend Lanes operator+(Lanes a, const Lanes& b) { return a += b; }
  friend Lanes operator-(Lanes a, const Lanes& b) { return a -= b; }
  friend Lanes operator*(Lanes a, const Lanes& b) { return from(a.v * b.v); }
  friend Lanes operator/(Lanes a, const Lanes& b) { return from(a.v / b.v); }
  friend Lanes operator-(Lanes a) { return from(-a.v); }
  static Lanes from(Vector x) {
    Lanes r;
    r.v = x;
    return r;
  }
};

// Lanes of one 256-bit register.
template <class Real>
inline constexpr int register_lanes = 32 / static_cast<int>(sizeof(Real));

// a * b + c rounded once per lane: the FMA instruction where the build has it (SINKGRAD_HOST_FMA;
// -ffp-contract=off keeps GCC from fusing a * b + c itself), else fma_of lane by lane.
template <class Real, int W>
inline Lanes<Real, W> fma_of(const Lanes<Real, W>& a, const Lanes<Real, W>& b,
                             const Lanes<Real, W>& c) {
#if defined(__FMA__)
  if constexpr (sizeof(Real) * W == 32) {
    if constexpr (sizeof(Real) == 4)
      return Lanes<Real, W>::from(_mm256_fmadd_ps(a.v, b.v, c.v));
    else
      return Lanes<Real, W>::from(_mm256_fmadd_pd(a.v, b.v, c.v));
  }
#endif
  Lanes<Real, W> r;
  for (int w = 0; w < W; ++w) r.v[w] = fma_of(a.v[w], b.v[w], c.v[w]);
  return r;
}

template <class Real, int W>
inline Lanes<Real, W> reciprocal_in_range(const Lanes<Real, W>& x) {
  return Lanes<Real, W>(Real(1)) / x;  // the scalar form's CPU branch: an IEEE division
}

// sqrt_of, abs_of, max_of per lane, as the scalar forms round (sqrt is correctly rounded, abs
// clears the sign bit, max_of(a, b) is a > b ? a : b).
template <class Real, int W>
inline Lanes<Real, W> sqrt_of(const Lanes<Real, W>& x) {
#if defined(__AVX__)
  if constexpr (sizeof(Real) * W == 32) {
    if constexpr (sizeof(Real) == 4)
      return Lanes<Real, W>::from(_mm256_sqrt_ps(x.v));
    else
      return Lanes<Real, W>::from(_mm256_sqrt_pd(x.v));
  }
#endif
  Lanes<Real, W> r;
  for (int w = 0; w < W; ++w) r.v[w] = sqrt_of(x.v[w]);
  return r;
}

template <class Real, int W>
inline Lanes<Real, W> abs_of(const Lanes<Real, W>& x) {
  Lanes<Real, W> r;
  for (int w = 0; w < W; ++w) r.v[w] = abs_of(x.v[w]);
  return r;
}

template <class Real, int W>
inline Lanes<Real, W> max_of(const Lanes<Real, W>& a, const Lanes<Real, W>& b) {
  return Lanes<Real, W>::from(a.v > b.v ? a.v : b.v);
}

template <class Real, int W>
inline void raise_to(Lanes<Real, W>& bound, const Lanes<Real, W>& x) {
  bound = max_of(x, bound);
}

// The tests the texts branch on, for a team of lanes that all go on together: is_finite holds
// where every lane is finite; any_positive where some lane is positive (team_cholesky goes on
// while a lane can: a lane whose pivot is not positive gets a diagonal that is not positive
// either, sqrt_of keeping the sign test, and its driver drops it).
template <class Real, int W>
inline bool is_finite(const Lanes<Real, W>& x) {
  bool finite = true;
  for (int w = 0; w < W; ++w) finite = finite && is_finite(x.v[w]);
  return finite;
}

template <class Real, int W>
inline bool any_positive(const Lanes<Real, W>& x) {
  bool positive = false;
  for (int w = 0; w < W; ++w) positive = positive || x.v[w] > Real(0);
  return positive;
}

// Writes value(s, j, w), entry (s.i, j) of lane w's gradient, to mats_of(w).grad_row for every
// lane w set in `lanes`, through the scalar CpuTeam of n = N; returns the lanes whose entries
// were all finite (the caller solves the others again, one matrix at a time).
template <int N, int W, class Scalar, class MatricesOf, class Value>
unsigned write_finite_lanes(const Scalar& scalar, MatricesOf mats_of, unsigned lanes, Value value) {
  unsigned written = 0;
  for (int w = 0; w < W; ++w) {
    if (!(lanes >> w & 1)) continue;
    const auto mats = mats_of(w);
    bool finite = true;
    scalar.each([&](auto s) {
      for (int j = 0; j < N; ++j) {
        const auto g = value(s, j, w);
        finite = finite && is_finite(g);
        mats.grad_row(s)[j] = g;
      }
    });
    if (finite) written |= 1u << w;
  }
  return written;
}

}  // namespace sinkgrad::math
