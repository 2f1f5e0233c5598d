#pragma once
// Which Sinkhorn forward produced R (docs/math.md, "Forward conventions"). A backward is right
// or wrong only relative to the forward it differentiates, so the convention travels with the
// problem.
//
// A convention is data (ForwardRecipe): a positive base B made from the logits M, then 2T
// half-steps that alternate sides from the first, each X <- X / guard(X.sum(axis)), with
// guard(s) = s + eps or max(s, eps). The presets, by the project whose reference code they
// transcribe:
//
//   columns_first  B = exp(M); T times cols, rows; s + eps              (the seeds; default)
//   rows_first     B = exp(M); T times rows, cols; s + eps              (TransformerEngine)
//   tilekernels    B = softmax_rows(M) + eps (the first row half-step); cols; then T - 1 times
//                  rows, cols; s + eps        (DeepSeek TileKernels; aliases maxtext, megatron_dev)
//   megatron_main  B = exp(M - row max); T times rows, cols; max(s, eps) (Megatron-LM main)
//   magi2          B = exp(M - global max); T times cols, rows; s + eps (MAGI-2)
//   mhc_triton     B = |M| + eps; T times rows, cols; s + eps           (NucleusAI mHC-triton)

#include <optional>
#include <string>
#include <string_view>

namespace sinkgrad {

enum class ForwardConvention {
  columns_first,
  rows_first,
  tilekernels,
  megatron_main,
  magi2,
  mhc_triton
};

enum class ForwardBase {
  exp,           // B = exp(M - shift)
  softmax_rows,  // B = softmax_rows(M) + eps, standing for the first (row) half-step
  abs,           // B = |M| + eps
};
// What exp's base subtracts from M. A shift cancels in R unless eps meets a sum it scales: a
// shift along the side normalised first never does (with max(s, eps), while s >= eps).
enum class BaseShift { none, row_max, column_max, global_max };
enum class DenominatorGuard { plus_eps, max_eps };  // s + eps, or max(s, eps) (torch's clamp)

struct ForwardRecipe {
  ForwardBase base;
  BaseShift shift;
  bool rows_first;  // the first half-step normalises rows; the last then normalises columns
  DenominatorGuard guard;
  double default_eps;  // the one table of default eps (the C ABI and Python read it from here)
};

// The data of every convention.
constexpr ForwardRecipe forward_recipe(ForwardConvention convention) {
  using B = ForwardBase;
  using S = BaseShift;
  using D = DenominatorGuard;
  switch (convention) {
    case ForwardConvention::columns_first:
      return {B::exp, S::none, false, D::plus_eps, 0.0};
    case ForwardConvention::rows_first:
      return {B::exp, S::none, true, D::plus_eps, 0.0};
    case ForwardConvention::tilekernels:
      return {B::softmax_rows, S::none, true, D::plus_eps, 1e-6};
    case ForwardConvention::megatron_main:
      return {B::exp, S::row_max, true, D::max_eps, 1e-6};
    case ForwardConvention::magi2:
      return {B::exp, S::global_max, false, D::plus_eps, 1e-12};
    case ForwardConvention::mhc_triton:
      return {B::abs, S::none, true, D::plus_eps, 1e-8};
  }
  return {B::exp, S::none, false, D::plus_eps, 0.0};
}

struct ForwardSpec {
  ForwardConvention convention = ForwardConvention::columns_first;
  double eps = 0;
};

std::string_view to_string(ForwardConvention convention);
// A preset's name or an alias (maxtext, megatron_dev: tilekernels); throws Error listing them.
ForwardConvention parse_forward_convention(std::string_view text);
// "columns_first, rows_first, ...": every accepted name, for messages and help texts.
std::string forward_convention_names();
// "exp(M - row max), T times rows then columns, max(sum, eps) (default eps 1e-06)": the recipe.
std::string forward_formula(ForwardConvention convention);
// "columns_first: <formula>; ...; maxtext = tilekernels; ...": every name, for help texts.
std::string forward_conventions_help();
// The eps a convention uses when none is given (forward_recipe's default_eps).
double default_forward_eps(ForwardConvention convention);
// The spec for a name and an optional eps (its default when absent); throws Error for an
// unknown name or an eps that is negative, NaN or infinite.
ForwardSpec make_forward_spec(std::string_view convention, std::optional<double> eps = {});
// Throws Error unless eps is finite and >= 0.
void check_forward_spec(const ForwardSpec& spec);
// The seeds' forward without eps: the one whose fast paths are tuned (bit for bit as before).
inline bool is_default_forward(const ForwardSpec& spec) {
  return spec.convention == ForwardConvention::columns_first && spec.eps == 0;
}
// rows_first without eps is the default forward of M^T, transposed: R_rf(M) = R_cf(M^T)^T, and
// its unrolled gradient at (M, G) is columns_first's at (M^T, G^T), transposed. The team forms
// run it that way (reading the matrices transposed), at the default's cost.
inline bool is_transposed_default_forward(const ForwardSpec& spec) {
  return spec.convention == ForwardConvention::rows_first && spec.eps == 0;
}
// Either of the two: the forwards whose team forms are the seeds' (on M or on M^T).
inline bool is_seeds_forward_up_to_transpose(const ForwardSpec& spec) {
  return is_default_forward(spec) || is_transposed_default_forward(spec);
}
// Whether the team forms (forward/convention_team.hpp and its replay) compute the convention:
// an unshifted exp or the row softmax as base, s + eps as guard. The others run one matrix at
// a time (forward/convention_forward.hpp) whatever n.
constexpr bool has_team_form(ForwardConvention convention) {
  const ForwardRecipe recipe = forward_recipe(convention);
  return recipe.base != ForwardBase::abs && recipe.shift == BaseShift::none &&
         recipe.guard == DenominatorGuard::plus_eps;
}
// Whether the last step normalises columns (so columns, not rows, sum to 1 exactly).
constexpr bool last_step_normalises_columns(ForwardConvention convention) {
  return forward_recipe(convention).rows_first;
}
// "columns_first", "rows_first eps=1e-06", ...: for messages and logs.
std::string describe(const ForwardSpec& spec);

}  // namespace sinkgrad
