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
// (solvers/unrolled/unrolled_lanes.hpp).

#include "core/host_device.hpp"

#if defined(__FMA__)
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

  Lanes& operator+=(const Lanes& o) {
    v += o.v;
    return *this;
  }
  Lanes& operator-=(const Lanes& o) {
    v -= o.v;
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

}  // namespace sinkgrad::math
