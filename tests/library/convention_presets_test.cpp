// Every forward preset (core/forward_spec.hpp) against a long-double transcription of the
// reference code of the project it is named after, written here from that code and sharing
// nothing with forward/, solvers/ or tests/support/convention_reference.hpp: the forward, and
// unrolled against a hand-written reverse mode of the transcription (what autograd of it gives).
// The projects' files, as read:
//   seeds 000/001 (columns_first): X = exp(M); T times X / X.sum(-2), X / X.sum(-1).
//   NVIDIA/TransformerEngine d0067d0, transformer_engine/common/triton/mhc.py (rows_first):
//     T times rows, then columns, of exp(M) (in the log domain there).
//   deepseek-ai/TileKernels 36d9e45, tile_kernels/mhc/sinkhorn_kernel.py, and
//   AI-Hypercomputer/maxtext e591f30, src/maxtext/layers/mhc.py `sinkhorn` (tilekernels, maxtext):
//     t = softmax(t, axis=-1) + eps; t / (t.sum(-2) + eps); T - 1 times t / (t.sum(-1) + eps),
//     t / (t.sum(-2) + eps).
//   NVIDIA/Megatron-LM d98e8a6 (main), megatron/core/transformer/hyper_connection.py,
//   SinkhornKnopp (megatron_main): M = exp(H - H.max(-1)); T times M / M.sum(-1).clamp(min=eps),
//     M / M.sum(-2).clamp(min=eps).
//   SandAI-org/MAGI-2-preview f68a0f9, inference/model/magi2_preview.py, _sinkhorn_knopp
//   (magi2): m = exp(h - h.amax((-2, -1))); T times m / (m.sum(-2) + eps), m / (m.sum(-1) + eps).
//   WithNucleusAI/mHC-triton aa21c11, src/mhc/_kernels.py _sinkhorn_kernel and
//   src/mhc/_torch_baseline.py sinkhorn_knopp_torch (mhc_triton): P = |M| + eps; T times
//     P / (P.sum(-1) + eps), P / (P.sum(-2) + eps).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "forward/sinkhorn_forward.hpp"
#include "tests/support/random_inputs.hpp"
#include "tests/support/reference_math.hpp"
#include "tests/support/solve_helpers.hpp"
#include "tests/support/wide.hpp"

namespace sinkgrad::testing {
namespace {

// One division X = Y / d(s) of the transcription, kept for its reverse: which axis, the
// matrix it divided and its line sums.
struct Division {
  char axis;  // 'r': rows (sum(-1)), 'c': columns (sum(-2))
  Square input;
  std::vector<Wide> sums;
};

struct Transcription {
  std::string base;         // "exp", "exp-rowmax", "exp-globalmax", "softmax", "abs"
  std::string first_steps;  // divisions before the T-times loop ("c" for tilekernels)
  std::string loop;         // one iteration of the loop: "cr" or "rc"
  int loop_count_offset;    // the loop runs T + offset times
  bool clamp;               // denominators sum.clamp(min=eps) rather than sum + eps
};

Transcription transcription(const std::string& preset) {
  if (preset == "columns_first") return {"exp", "", "cr", 0, false};
  if (preset == "rows_first") return {"exp", "", "rc", 0, false};
  if (preset == "tilekernels" || preset == "maxtext") return {"softmax", "c", "rc", -1, false};
  if (preset == "megatron_main") return {"exp-rowmax", "", "rc", 0, true};
  if (preset == "magi2") return {"exp-globalmax", "", "cr", 0, false};
  return {"abs", "", "rc", 0, false};  // mhc_triton
}

struct Tape {
  Square M, base, X;
  std::vector<Division> divisions;
  int clamped = 0;  // lines whose clamp took eps
};

Wide denominator(Wide sum, Wide eps, bool clamp) {
  return clamp ? std::max(sum, eps) : sum + eps;
}

Tape run_transcription(const Transcription& t, const Square& M, int n, int T, Wide eps) {
  Tape tape{M, Square(M.size()), {}, {}};
  Square& B = tape.base;
  if (t.base == "softmax") {
    for (int i = 0; i < n; ++i) {
      Wide top = M[i * n], sum = 0;
      for (int j = 1; j < n; ++j) top = std::max(top, M[i * n + j]);
      for (int j = 0; j < n; ++j) sum += std::exp(M[i * n + j] - top);
      for (int j = 0; j < n; ++j) B[i * n + j] = std::exp(M[i * n + j] - top) / sum + eps;
    }
  } else if (t.base == "abs") {
    for (size_t k = 0; k < M.size(); ++k) B[k] = std::fabs(M[k]) + eps;
  } else {
    const Wide global = *std::max_element(M.begin(), M.end());
    for (int i = 0; i < n; ++i) {
      const Wide row = *std::max_element(M.begin() + i * n, M.begin() + (i + 1) * n);
      const Wide shift = t.base == "exp-rowmax" ? row : t.base == "exp-globalmax" ? global : 0;
      for (int j = 0; j < n; ++j) B[i * n + j] = std::exp(M[i * n + j] - shift);
    }
  }
  std::string axes = t.first_steps;
  for (int k = 0; k < T + t.loop_count_offset; ++k) axes += t.loop;
  tape.X = B;
  for (char axis : axes) {
    Division d{axis, tape.X, std::vector<Wide>(n, 0)};
    for (int a = 0; a < n; ++a) {
      for (int k = 0; k < n; ++k) d.sums[a] += axis == 'c' ? tape.X[k * n + a] : tape.X[a * n + k];
      tape.clamped += t.clamp && d.sums[a] < eps;
    }
    for (int a = 0; a < n; ++a)
      for (int k = 0; k < n; ++k)
        (axis == 'c' ? tape.X[k * n + a] : tape.X[a * n + k]) /=
            denominator(d.sums[a], eps, t.clamp);
    tape.divisions.push_back(std::move(d));
  }
  return tape;
}

// dL/dM for L = sum(G ⊙ X), reversing every operation of the tape as autograd would: a clamp
// passes the gradient where sum >= eps, a max passes it to its (first) maximal entry.
Square reverse(const Transcription& t, const Tape& tape, const Square& G, int n, Wide eps) {
  Square bar = G;
  for (auto d = tape.divisions.rbegin(); d != tape.divisions.rend(); ++d) {
    Square prev(bar.size());
    for (int a = 0; a < n; ++a) {
      const Wide s = d->sums[a], den = denominator(s, eps, t.clamp);
      const Wide slope = t.clamp && s < eps ? 0 : 1;  // d den / d s
      Wide dot = 0;
      for (int k = 0; k < n; ++k) {
        const int e = d->axis == 'c' ? k * n + a : a * n + k;
        dot += bar[e] * d->input[e];
      }
      for (int k = 0; k < n; ++k) {
        const int e = d->axis == 'c' ? k * n + a : a * n + k;
        prev[e] = bar[e] / den - slope * dot / (den * den);
      }
    }
    bar = prev;
  }
  const Square& M = tape.M;
  const Square& B = tape.base;
  Square grad(M.size());
  if (t.base == "softmax") {
    for (int i = 0; i < n; ++i) {
      Wide dot = 0;
      for (int j = 0; j < n; ++j) dot += bar[i * n + j] * (B[i * n + j] - eps);
      for (int j = 0; j < n; ++j) grad[i * n + j] = (B[i * n + j] - eps) * (bar[i * n + j] - dot);
    }
  } else if (t.base == "abs") {
    for (size_t k = 0; k < M.size(); ++k) grad[k] = bar[k] * (M[k] > 0 ? 1 : M[k] < 0 ? -1 : 0);
  } else {
    for (size_t k = 0; k < M.size(); ++k) grad[k] = bar[k] * B[k];  // d exp(M - c) / d(M - c)
    const auto minus_sum_at_max = [&](size_t first, size_t count) {
      Wide sum = 0;
      size_t top = first;
      for (size_t k = first; k < first + count; ++k) {
        sum += bar[k] * B[k];
        if (M[k] > M[top]) top = k;
      }
      grad[top] -= sum;
    };
    if (t.base == "exp-globalmax") minus_sum_at_max(0, M.size());
    if (t.base == "exp-rowmax")
      for (int i = 0; i < n; ++i) minus_sum_at_max(static_cast<size_t>(i) * n, n);
  }
  return grad;
}

Wide max_abs(const Square& x) {
  Wide worst = 0;
  for (Wide v : x) worst = std::max(worst, std::fabs(v));
  return worst;
}

struct Preset {
  std::string name;
  double eps;  // < 0: the preset's default
};

const Preset presets[] = {
    {"columns_first", -1}, {"rows_first", -1},      {"tilekernels", -1},     {"maxtext", -1},
    {"megatron_main", -1}, {"megatron_main", 1e-2}, {"magi2", -1},           {"magi2", 1e-3},
    {"mhc_triton", -1},    {"mhc_triton", 1e-3},    {"columns_first", 1e-3}, {"rows_first", 1e-3},
};

TEST(ConventionPresets, ForwardAndUnrolledMatchEachProjectsReferenceCode) {
  auto rng = make_rng(5101);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  int clamped = 0;  // megatron_main's lines divided by eps: the branch is tested, not only sums
  for (const Preset& p : presets)
    for (int n = 1; n <= 16; ++n)
      for (int T : {1, 3, 20})
        for (double scale : {2.0, 30.0}) {
          const ForwardSpec spec =
              p.eps < 0 ? make_forward_spec(p.name) : make_forward_spec(p.name, p.eps);
          SCOPED_TRACE(p.name + " eps " + std::to_string(spec.eps) + " n " + std::to_string(n) +
                       " T " + std::to_string(T) + " scale " + std::to_string(scale));
          const auto M = normal_batch<double>(rng, 2, n, scale);
          const auto G = normal_batch<double>(rng, 2, n, 1.0);
          HostBatch<double> R(M.batch(), n);
          sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
          const auto sol = solve(*solver, M, R, G, T, false, spec);
          const Transcription t = transcription(p.name);
          const int nn = n * n;
          for (index_t b = 0; b < M.batch(); ++b) {
            const Tape tape = run_transcription(t, widen(M.data() + b * nn, n), n, T, spec.eps);
            clamped += tape.clamped;
            Wide forward_error = 0;
            for (int k = 0; k < nn; ++k)
              forward_error = std::max(forward_error, std::fabs(R.data()[b * nn + k] - tape.X[k]));
            EXPECT_LT(static_cast<double>(forward_error), 1e-13);
            ASSERT_EQ(sol.status[b], SolveStatus::ok);
            const Square ref = reverse(t, tape, widen(G.data() + b * nn, n), n, spec.eps);
            Wide error = 0;
            for (int k = 0; k < nn; ++k)
              error = std::max(error, std::fabs(sol.grad.data()[b * nn + k] - ref[k]));
            // 1e-10 of the gradient's largest entry; where that entry is itself what is left of
            // terms of order |G| that cancel (n = 1, saturated logits: below about 1e-4), their
            // rounding bounds it instead, some units of |G|'s last place per entry and step
            // (up to 4 eps max|G| n T seen, magi2 at n = 2, T = 3).
            Wide largest_G = 0;
            for (int k = 0; k < nn; ++k)
              largest_G = std::max(largest_G, Wide(std::fabs(G.data()[b * nn + k])));
            const double rounding = 16 * 0x1p-52 * static_cast<double>(largest_G) * n * T;
            EXPECT_LE(static_cast<double>(error),
                      std::max(1e-10 * static_cast<double>(max_abs(ref)), rounding));
          }
        }
  EXPECT_GT(clamped, 0);
}

// The implicit solvers read R, G, the exact side and the invariant side, and those come from a
// preset's data: each new preset gives, on the same R and G, the bits of the existing preset
// with the same sides (megatron_main: columns exact, rows invariant, as rows_first without eps;
// magi2 without eps: rows exact, columns invariant, as columns_first; mhc_triton: columns
// exact, no invariant side, as rows_first with eps, its result then carried from log B to M by
// the factor 1 / (M + eps sign(M)), applied here independently of core/log_base_chain.hpp).
TEST(ConventionPresets, ImplicitSolversTakeTheirSidesFromTheData) {
  auto rng = make_rng(5102);
  const std::pair<ForwardSpec, ForwardSpec> pairs[] = {
      {make_forward_spec("megatron_main"), make_forward_spec("rows_first")},
      {make_forward_spec("magi2", 0.0), make_forward_spec("columns_first")},
      {make_forward_spec("mhc_triton"), make_forward_spec("rows_first", 1e-3)},
  };
  for (const auto& config : implicit_solver_configs())
    for (const auto& [preset, same_sides] : pairs)
      for (int n : {3, 8}) {
        SCOPED_TRACE(config.label() + " " + describe(preset) + " n " + std::to_string(n));
        const auto M = normal_batch<double>(rng, 3, n, 1.0);
        const auto G = normal_batch<double>(rng, 3, n, 1.0);
        HostBatch<double> R(M.batch(), n);
        sinkhorn_forward<double>(M.view(), 4, R.view(), nullptr, Device::cpu, preset);
        const auto solver = config.create();
        const auto a = solve(*solver, M, R, G, 4, false, preset);
        auto b = solve(*solver, M, R, G, 4, false, same_sides);
        if (preset.convention == ForwardConvention::mhc_triton)
          for (index_t k = 0; k < R.size(); ++k)
            b.grad.data()[k] /= M.data()[k] + std::copysign(preset.eps, M.data()[k]);
        EXPECT_TRUE(same_bits(a.grad.data(), b.grad.data(), static_cast<int>(R.size())));
      }
}

// mhc_triton's base |M| + eps is no scaling of exp(M): auto's implicit gradient is carried to M
// (core/log_base_chain.hpp), and converged matrices take it (status ok) with the exact
// gradient's value; the others get unrolled's bits (status fallback).
TEST(ConventionPresets, AutoCarriesItsGradientForAnAbsBase) {
  auto rng = make_rng(5104);
  const ForwardSpec spec = make_forward_spec("mhc_triton");
  const int n = 4, T = 60;
  const auto M = normal_batch<double>(rng, 40, n, 1.0);
  const auto G = normal_batch<double>(rng, 40, n, 1.0);
  HostBatch<double> R(M.batch(), n);
  sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
  const auto a = solve(*SolverConfig{"auto", {}}.create(), M, R, G, T, false, spec);
  const auto u = solve(*SolverConfig{"unrolled", {}}.create(), M, R, G, T, false, spec);
  int implicit = 0;
  for (index_t b = 0; b < M.batch(); ++b) {
    const double* got = a.grad.data() + b * n * n;
    const double* exact = u.grad.data() + b * n * n;
    if (a.status[b] == SolveStatus::fallback) {
      EXPECT_TRUE(same_bits(got, exact, n * n)) << b;
      continue;
    }
    ASSERT_EQ(a.status[b], SolveStatus::ok) << b;
    ++implicit;
    EXPECT_LE(relative_error(got, exact, static_cast<std::size_t>(n * n)), 1e-6) << b;
  }
  EXPECT_GE(implicit, 20);
}

// Where a preset's R does not see a shift along one side, unrolled's gradient sums to zero
// along it: megatron_main's rows whatever eps (its base subtracts the row max), magi2's columns
// without eps.
TEST(ConventionPresets, UnrolledSumsToZeroAlongTheInvariantSide) {
  auto rng = make_rng(5103);
  const auto solver = SolverConfig{"unrolled", {}}.create();
  for (const auto& [spec, rows] : {std::pair{make_forward_spec("megatron_main"), true},
                                   std::pair{make_forward_spec("megatron_main", 0.5), true},
                                   std::pair{make_forward_spec("magi2", 0.0), false}}) {
    SCOPED_TRACE(describe(spec));
    const int n = 6, T = 3;
    const auto M = normal_batch<double>(rng, 4, n, 3.0);
    const auto G = normal_batch<double>(rng, 4, n, 1.0);
    HostBatch<double> R(M.batch(), n);
    sinkhorn_forward<double>(M.view(), T, R.view(), nullptr, Device::cpu, spec);
    const auto sol = solve(*solver, M, R, G, T, false, spec);
    for (index_t b = 0; b < M.batch(); ++b)
      for (int a = 0; a < n; ++a) {
        double sum = 0, size = 0;
        for (int k = 0; k < n; ++k) {
          const double g = sol.grad.data()[b * n * n + (rows ? a * n + k : k * n + a)];
          sum += g;
          size += std::fabs(g);
        }
        EXPECT_LE(std::fabs(sum), 1e-13 * std::max(size, 1.0));
      }
  }
}

}  // namespace
}  // namespace sinkgrad::testing
