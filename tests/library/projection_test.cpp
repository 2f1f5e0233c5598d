// The forward's invariant subspace (docs/math.md): the exact gradient of every convention has
// zero sums along the side a constant shift of M does not change R (columns for columns_first,
// rows for rows_first and tilekernels, none with eps > 0 but for tilekernels), checked on
// `unrolled`; every implicit solver projects onto it by default (project=true), which brings
// it no farther from `unrolled`, leaves the corrected gradient as it was to rounding, and
// project=false gives the unprojected formula's bits.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/log_base_chain.hpp"
#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"
#include "tests/support/solve_helpers.hpp"

namespace sinkgrad::testing {
namespace {

struct SideCase {
  ForwardSpec spec;
  std::optional<ReferenceSide> side;  // along which the exact gradient sums to 0
};

std::vector<SideCase> side_cases() {
  return {{{ForwardConvention::columns_first, 0.0}, ReferenceSide::columns},
          {{ForwardConvention::columns_first, 1e-3}, std::nullopt},
          {{ForwardConvention::rows_first, 0.0}, ReferenceSide::rows},
          {{ForwardConvention::rows_first, 1e-3}, std::nullopt},
          {{ForwardConvention::tilekernels, 0.0}, ReferenceSide::rows},
          {{ForwardConvention::tilekernels, 1e-6}, ReferenceSide::rows},
          {{ForwardConvention::tilekernels, 1e-2}, ReferenceSide::rows}};
}

ReferenceSide other(ReferenceSide side) {
  return side == ReferenceSide::rows ? ReferenceSide::columns : ReferenceSide::rows;
}

// The largest |sum| of a row (or column) of matrix b.
template <class Real>
double largest_sum(const HostBatch<Real>& x, index_t b, ReferenceSide side) {
  double largest = 0;
  for (int a = 0; a < x.n(); ++a) {
    Wide sum = 0;
    for (int k = 0; k < x.n(); ++k) sum += side == ReferenceSide::rows ? x(b, a, k) : x(b, k, a);
    largest = std::max(largest, static_cast<double>(std::fabs(sum)));
  }
  return largest;
}

// ||R ⊙ G||_F of matrix b: the scale of every implicit gradient.
template <class Real>
double scale_of(const HostBatch<Real>& R, const HostBatch<Real>& G, index_t b) {
  Wide sum = 0;
  const index_t nn = index_t(R.n()) * R.n();
  for (index_t k = b * nn; k < (b + 1) * nn; ++k) {
    const Wide x = Wide(R.data()[k]) * G.data()[k];
    sum += x * x;
  }
  return static_cast<double>(std::sqrt(sum));
}

template <class Real>
HostBatch<Real> run_forward(const HostBatch<Real>& M, int T, const ForwardSpec& spec) {
  HostBatch<Real> R(M.batch(), M.n());
  sinkhorn_forward<Real>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
  return R;
}

// The claim the projection rests on, on fresh non-converged inputs (T = 1..3, uniform(0, 4)
// logits): unrolled's gradient sums to 0 along the invariant side, and not along the other.
TEST(Projection, ExactGradientHasZeroSumsOnlyAlongTheInvariantSide) {
  auto rng = make_rng(2101);
  const auto unrolled = SolverRegistry::global().create("unrolled", {});
  for (const SideCase& c : side_cases())
    for (int n : {4, 5, 16})
      for (int T : {1, 2, 3}) {
        SCOPED_TRACE(describe(c.spec) + " n " + std::to_string(n) + " T " + std::to_string(T));
        const auto M = uniform_batch<double>(rng, 8, n, 0.0, 4.0);
        const auto G = normal_batch<double>(rng, 8, n);
        const auto R = run_forward(M, T, c.spec);
        const auto exact = solve(*unrolled, M, R, G, T, false, c.spec);
        double off_side = 0;  // the largest sum where none is expected to vanish
        for (index_t b = 0; b < 8; ++b) {
          ASSERT_EQ(exact.status[b], SolveStatus::ok);
          const double scale = scale_of(R, G, b);
          if (c.side) {
            EXPECT_LE(largest_sum(exact.grad, b, *c.side), 1e-12 * scale) << "matrix " << b;
            off_side = std::max(off_side, largest_sum(exact.grad, b, other(*c.side)) / scale);
          } else {
            for (ReferenceSide side : {ReferenceSide::rows, ReferenceSide::columns})
              off_side = std::max(off_side, largest_sum(exact.grad, b, side) / scale);
          }
        }
        // eps = 1e-3 leaves sums of order 1e-4 ||R ⊙ G|| and more; the other side, order 1.
        EXPECT_GT(off_side, 1e-6);
      }
}

SolverConfig with_project(SolverConfig config, const char* value) {
  config.options["project"] = value;
  return config;
}

bool usable(SolveStatus status) {
  return status == SolveStatus::ok || status == SolveStatus::not_converged ||
         status == SolveStatus::ill_conditioned;
}

// Every implicit solver, every convention, float32 and float64: the projected gradient sums to
// 0 along the invariant side (to rounding, relative to ||R ⊙ G||), is the independent
// projection of the unprojected one (project=false), is no farther from unrolled's (float64)
// gradient, and equals the unprojected one where there is no invariant side. The corrected
// gradient already lies in the subspace: project=false sums to 0 along both sides, rows to
// rounding and columns to the solve's accuracy (CG: its tolerance), and the projection moves
// it no more than that.
template <class Real>
void check_projection(std::uint64_t salt) {
  auto rng = make_rng(salt);
  const double tolerance = sizeof(Real) == 4 ? 1e-5 : 1e-12;
  const auto unrolled = SolverRegistry::global().create("unrolled", {});
  for (const SolverConfig& config : implicit_solver_configs()) {
    const bool corrected = config.label().find("corrected") != std::string::npos;
    const bool cg = config.name.rfind("cg", 0) == 0;
    const auto projected = with_project(config, "true").create();
    const auto raw = with_project(config, "false").create();
    for (const SideCase& c : side_cases())
      for (int n : {4, 5, 16})
        for (int T : {1, 2, 3}) {
          SCOPED_TRACE(config.label() + " " + describe(c.spec) + " n " + std::to_string(n) + " T " +
                       std::to_string(T) + (sizeof(Real) == 4 ? " f32" : " f64"));
          const auto M64 = uniform_batch<double>(rng, 6, n, 0.0, 4.0);
          const auto G64 = normal_batch<double>(rng, 6, n);
          const auto M = convert<Real>(M64), G = convert<Real>(G64);
          const auto R = run_forward(M, T, c.spec);
          const auto p = solve(*projected, M, R, G, T, false, c.spec);
          const auto u = solve(*raw, M, R, G, T, false, c.spec);
          const auto exact =
              solve(*unrolled, M64, run_forward(M64, T, c.spec), G64, T, false, c.spec);
          const int nn = n * n;
          const bool carried = carries_log_base_gradient(c.spec);
          double largest_change = 0;  // of the plain gradient, relative to ||R ⊙ G||
          for (index_t b = 0; b < 6; ++b) {
            SCOPED_TRACE("matrix " + std::to_string(b));
            ASSERT_EQ(p.status[b], u.status[b]);
            if (!usable(p.status[b])) continue;
            const Real* pg = p.grad.data() + b * nn;
            const Real* ug = u.grad.data() + b * nn;
            const double scale = std::max(scale_of(R, G, b), difference_norm(ug, Square(nn), nn));
            if (!c.side || carried) {
              // Carried (core/log_base_chain.hpp): the row softmax's reverse leaves every row
              // summing to 0, and the solver projects nothing (projected_side).
              EXPECT_EQ(std::memcmp(pg, ug, sizeof(Real) * nn), 0) << "projected without a side";
              if (carried) {
                EXPECT_LE(largest_sum(p.grad, b, *c.side), tolerance * scale);
              }
              continue;
            }
            EXPECT_LE(largest_sum(p.grad, b, *c.side), tolerance * scale);
            const Square Rb = widen(R.data() + b * nn, n);
            const Square reference = reference_projection(widen(ug, n), Rb, n, *c.side);
            EXPECT_LE(difference_norm(pg, reference, nn), tolerance * scale);
            // No farther from the exact gradient in the norm the projection is orthogonal in;
            // and where R is zero the gradient stays zero, as the exact one is.
            const auto* eg = exact.grad.data() + b * nn;
            const double projected_error = weighted_difference_norm(pg, eg, Rb, nn);
            const double raw_error = weighted_difference_norm(ug, eg, Rb, nn);
            EXPECT_LE(projected_error,
                      raw_error + tolerance * weighted_difference_norm(ug, Square(nn), Rb, nn));
            for (int k = 0; k < nn; ++k) {
              if (R.data()[b * nn + k] == Real(0)) {
                EXPECT_EQ(pg[k], Real(0));
              }
            }
            largest_change =
                std::max(largest_change, difference_norm(pg, ug, nn) / scale_of(R, G, b));
            if (corrected) {
              // The eliminated side sums to 0 to rounding (its multipliers are solved from the
              // other's), the other to the solve's residual. cg_corrected eliminates the side
              // the forward made exact: the columns after rows_first and tilekernels.
              const bool columns_eliminated = cg && last_step_normalises_columns(c.spec.convention);
              const ReferenceSide exact_side =
                  columns_eliminated ? ReferenceSide::columns : ReferenceSide::rows;
              const ReferenceSide solved_side =
                  columns_eliminated ? ReferenceSide::rows : ReferenceSide::columns;
              const double solve_accuracy = (cg ? 100 : 1) * tolerance * scale;
              EXPECT_LE(largest_sum(u.grad, b, exact_side), tolerance * scale);
              EXPECT_LE(largest_sum(u.grad, b, solved_side), solve_accuracy);
              EXPECT_LE(difference_norm(pg, ug, nn), solve_accuracy);
            }
          }
          // Not vacuous: the plain gradient leaves the subspace while the forward has not
          // converged (the largest change of 6 matrices fell to 1.7e-4 at n = 16, T = 3).
          if (!corrected && c.side && !carried) {
            EXPECT_GT(largest_change, 1e-5);
          }
        }
  }
}

TEST(Projection, EveryImplicitSolverProjectsOntoTheInvariantSubspace) {
  check_projection<double>(2102);
  check_projection<float>(2103);
}

// The default is project=true.
TEST(Projection, IsOnByDefault) {
  auto rng = make_rng(2104);
  const auto M = uniform_batch<double>(rng, 4, 5, 0.0, 4.0);
  const auto G = normal_batch<double>(rng, 4, 5);
  const auto R = forward(M, 1);
  for (const SolverConfig& config : implicit_solver_configs()) {
    SCOPED_TRACE(config.label());
    const auto a = solve(*config.create(), M, R, G, 1);
    const auto b = solve(*with_project(config, "true").create(), M, R, G, 1);
    EXPECT_EQ(std::memcmp(a.grad.data(), b.grad.data(), sizeof(double) * a.grad.size()), 0);
  }
}

}  // namespace
}  // namespace sinkgrad::testing
