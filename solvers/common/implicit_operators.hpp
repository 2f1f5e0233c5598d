#pragma once
// The implicit systems' pieces in team form (kernels/team.hpp): marginals and input
// checks, right-hand sides, matrix-free operators, back-substitution and gradient assembly.
// Each applies its matrix in O(n^2) without forming it; a lane touches only its own rows and
// columns of R and G (Matrices: R_row, R_col, G_row, G_col, grad_row per slot) and the shared
// copy of a vector.

#include "kernels/numeric.hpp"
#include "kernels/team_fail.hpp"
#include "solvers/common/cg_math.hpp"
#include "solvers/common/invariant_side.hpp"

namespace sinkgrad::math {

template <class Team>
struct TeamMarginals {
  typename Team::Vec r;    // row sums of R
  typename Team::Vec c;    // column sums of R
  typename Team::Vec s_r;  // row sums of R ⊙ G
  typename Team::Vec s_c;  // column sums of R ⊙ G
};

// Checks R and G (finite, R >= 0, no zero row or column of R) and computes the marginals.
// Returns false (on every lane) for invalid input. violation, when not null, receives
// max(|r_i - 1|, |c_j - 1|) over all i, j; weighted_square, when not null, ||R ⊙ G||^2.
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool team_marginals(const Team& team, const Matrices& mats, TeamMarginals<Team>& m,
                                Real* violation = nullptr, Real* weighted_square = nullptr) {
  const int n = team.n();
  bool ok = true;
  Real largest = 0;
  team.each([&](Slot s) {
    const auto& R = mats.R_row(s);
    const auto& G = mats.G_row(s);
    const auto& Rc = mats.R_col(s);
    const auto& Gc = mats.G_col(s);
    Real r = 0, sr = 0, c = 0, sc = 0;
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      const Real x = R[j], g = G[j];
      // & rather than ||: no branch per entry on the GPU
      if (!(is_finite(x) & is_finite(g) & (x >= Real(0)))) ok = false;
      r += x;
      sr += x * g;
      c += Rc[j];
      sc += Rc[j] * Gc[j];
    }
    m.r[s] = r;
    m.s_r[s] = sr;
    m.c[s] = c;
    m.s_c[s] = sc;
    if (!(r > Real(0)) || !(c > Real(0))) ok = false;
    largest = max_of(largest, max_of(abs_of(r - Real(1)), abs_of(c - Real(1))));
  });
  if (violation != nullptr) {
    *violation = team.max([&](Slot) { return largest; });
  }
  if (weighted_square != nullptr) {
    *weighted_square = team.sum([&](Slot s) {
      const auto& R = mats.R_row(s);
      const auto& G = mats.G_row(s);
      Real sum = 0;
      SINKGRAD_UNROLL
      for (int j = 0; j < Team::cap; ++j) {
        if (j >= n) break;
        const Real x = R[j] * G[j];
        sum = fma_of(x, x, sum);
      }
      return sum;
    });
  }
  return team.all(ok);
}

// Right-hand side and back-substitution of the two Schur-complement systems for β.
//   plain:     (I - R^T R) β = s_c - R^T s_r,                 α = s_r - R β
//   corrected: (diag(c) - R^T diag(r)^-1 R) β = s_c - R^T diag(r)^-1 s_r,
//                                                             α = diag(r)^-1 (s_r - R β)
//
// With terms not null it also receives max_j τ_j, τ_j = Σ_i R_ij (|G_ij| + |t_i|) where t is what
// R^T multiplies: a bound on the size of the terms whose difference is b_j, so that b's rounding
// error is a small multiple of the unit roundoff times τ (CG's floor, rhs_rounding_floor).
template <class Real, class Team, class Matrices>
SINKGRAD_HD void team_schur_rhs(const Team& team, const Matrices& mats, bool corrected,
                                const TeamMarginals<Team>& m, typename Team::Vec& b,
                                Real* terms = nullptr) {
  typename Team::Vec t;
  team.each([&](Slot s) { t[s] = corrected ? m.s_r[s] / m.r[s] : m.s_r[s]; });
  const auto& all_t = team.share(t);
  team.each([&](Slot s) { b[s] = m.s_c[s] - dot_n<Team::cap>(mats.R_col(s), all_t, team.n()); });
  if (terms == nullptr) return;
  *terms = team.max([&](Slot s) {
    const auto& Rc = mats.R_col(s);
    const auto& Gc = mats.G_col(s);
    Real sum = 0;
    SINKGRAD_UNROLL
    for (int i = 0; i < Team::cap; ++i) {
      if (i >= team.n()) break;
      sum = fma_of(Rc[i], abs_of(Gc[i]) + abs_of(all_t[i]), sum);
    }
    return sum;
  });
}

template <class Real, class Team, class Matrices>
SINKGRAD_HD void team_schur_alpha(const Team& team, const Matrices& mats, bool corrected,
                                  const TeamMarginals<Team>& m, const typename Team::Vec& beta,
                                  typename Team::Vec& alpha) {
  const auto& all_beta = team.share(beta);
  team.each([&](Slot s) {
    alpha[s] = m.s_r[s] - dot_n<Team::cap>(mats.R_row(s), all_beta, team.n());
    if (corrected) alpha[s] /= m.r[s];
  });
}

// grad = R ⊙ (G - α 1^T - 1 β^T); returns whether every entry is finite (on every lane).
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool team_assemble_gradient(const Team& team, const Matrices& mats,
                                        const typename Team::Vec& alpha,
                                        const typename Team::Vec& beta) {
  const int n = team.n();
  const auto& all_beta = team.share(beta);
  bool finite = true;
  team.each([&](Slot s) {
    const auto& R = mats.R_row(s);
    const auto& G = mats.G_row(s);
    const auto& grad = mats.grad_row(s);
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      const Real value = R[j] * (G[j] - alpha[s] - all_beta[j]);
      if (!is_finite(value)) finite = false;
      grad[j] = value;
    }
  });
  return team.all(finite);
}

// The projection onto the matrices whose sums along `side` (the team's coordinates) are 0,
// where the exact gradient of the forward lies: each line (row or column) k of the gradient
// loses shift_k R's line k, shift_k = (its sum) / (R's sum), the projection that is orthogonal
// in the metric weighted by 1 / R. It stays in the implicit form R ⊙ (G − α1ᵀ − 1βᵀ) (it shifts
// α or β), so the gradient stays zero where R is (exp underflowed, where the exact gradient is
// zero too), and moves no farther from the exact gradient in that metric. Each sum runs in
// ascending order on the lane that owns the line, on both devices alike. Returns whether every
// entry is finite (on every lane).
template <class Real, class Team, class Matrices>
SINKGRAD_HD bool team_project_gradient(const Team& team, const Matrices& mats, GradientSide side) {
  const int n = team.n();
  if (side == GradientSide::none) return true;
  // sum(x) / sum(w) over [0 .. n), both in ascending order.
  const auto shift_of = [&](const auto& x, const auto& w) {
    Real sum = 0, weight = 0;
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      sum += x[j];
      weight += w[j];
    }
    return sum / weight;
  };
  // grad[j] -= shift_of(j) R[j] along a lane's row, noting any entry that is not finite.
  bool finite = true;
  const auto subtract = [&](const auto& grad, const auto& R, const auto& shift_of_column) {
    SINKGRAD_UNROLL
    for (int j = 0; j < Team::cap; ++j) {
      if (j >= n) break;
      const Real value = fma_of(-shift_of_column(j), R[j], grad[j]);
      if (!is_finite(value)) finite = false;
      grad[j] = value;
    }
  };
  if (side == GradientSide::rows) {
    team.each([&](Slot s) {
      const auto& R = mats.R_row(s);
      const auto& grad = mats.grad_row(s);
      const Real shift = shift_of(grad, R);
      subtract(grad, R, [&](int) { return shift; });
    });
    return team.all(finite);
  }
  typename Team::Vec shift{};  // {}: GCC cannot see that share() reads only the n written
  team.sync();                 // the columns hold rows other lanes have just written
  team.each([&](Slot s) { shift[s] = shift_of(mats.grad_col(s), mats.R_col(s)); });
  // share() also orders every lane's reads of the columns before the writes below.
  const auto& all_shift = team.share(shift);
  team.each([&](Slot s) {
    subtract(mats.grad_row(s), mats.R_row(s), [&](int j) { return all_shift[j]; });
  });
  return team.all(finite);
}

// S = I - R^T R (plain Schur complement, assumes r = c = 1).
template <class Real, class Matrices>
struct PlainSchurOperator {
  const Matrices& mats;
  template <class Team>
  SINKGRAD_HD void apply(const Team& team, const CgVector<Team, 1>& x, CgVector<Team, 1>& y) const {
    typename Team::Vec t;
    const auto& all_x = team.share(x.part[0]);
    team.each([&](Slot s) { t[s] = dot_n<Team::cap>(mats.R_row(s), all_x, team.n()); });
    const auto& all_t = team.share(t);
    team.each([&](Slot s) {
      y.part[0][s] = x.part[0][s] - dot_n<Team::cap>(mats.R_col(s), all_t, team.n());
    });
  }
};

// S = diag(c) - R^T diag(r)^-1 R (corrected Schur complement, actual marginals). diag(r)^-1 is
// kept as reciprocals, computed once: a division per row and step costs a one-thread GPU team
// at n = 8 about as many instructions as a quarter of the products with R.
template <class Real, class Team, class Matrices>
struct CorrectedSchurOperator {
  const Matrices& mats;
  const TeamMarginals<Team>& m;
  typename Team::Vec inverse_r;
  SINKGRAD_HD CorrectedSchurOperator(const Team& team, const Matrices& matrices,
                                     const TeamMarginals<Team>& marginals)
      : mats(matrices), m(marginals) {
    team.each([&](Slot s) { inverse_r[s] = Real(1) / m.r[s]; });
  }
  SINKGRAD_HD void apply(const Team& team, const CgVector<Team, 1>& x, CgVector<Team, 1>& y) const {
    typename Team::Vec t;
    const auto& all_x = team.share(x.part[0]);
    team.each(
        [&](Slot s) { t[s] = dot_n<Team::cap>(mats.R_row(s), all_x, team.n()) * inverse_r[s]; });
    const auto& all_t = team.share(t);
    team.each([&](Slot s) {
      y.part[0][s] = m.c[s] * x.part[0][s] - dot_n<Team::cap>(mats.R_col(s), all_t, team.n());
    });
  }
};

// A = [I R; R^T I] acting on [α; β] (the 2n block system of seed 000): part 0 is α, part 1 β.
template <class Real, class Matrices>
struct PlainBlockOperator {
  const Matrices& mats;
  template <class Team>
  SINKGRAD_HD void apply(const Team& team, const CgVector<Team, 2>& x, CgVector<Team, 2>& y) const {
    const auto& all_beta = team.share(x.part[1]);
    team.each([&](Slot s) {
      y.part[0][s] = dot_n<Team::cap>(mats.R_row(s), all_beta, team.n()) + x.part[0][s];
    });
    const auto& all_alpha = team.share(x.part[0]);
    team.each([&](Slot s) {
      y.part[1][s] = dot_n<Team::cap>(mats.R_col(s), all_alpha, team.n()) + x.part[1][s];
    });
  }
};

}  // namespace sinkgrad::math
