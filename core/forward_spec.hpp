#pragma once
// Which Sinkhorn forward produced R (docs/math.md, "Forward conventions"). A backward is right
// or wrong only relative to the forward it differentiates, so the convention travels with the
// problem.
//
//   columns_first  X = exp(M); T times: X = cols(X), X = rows(X)           (the seeds; default)
//   rows_first     X = exp(M); T times: X = rows(X), X = cols(X)           (TransformerEngine)
//   tilekernels    X = softmax_rows(M) + eps; X = cols(X); then T - 1 times rows, cols
//                                                                          (DeepSeek TileKernels)
// with rows(X) = X / (X.sum(-1) + eps) and cols(X) = X / (X.sum(-2) + eps). Every convention
// takes an eps >= 0 (finite): 0 by default for columns_first and rows_first, 1e-6 for
// tilekernels.

#include <optional>
#include <string>
#include <string_view>

namespace sinkgrad {

enum class ForwardConvention { columns_first, rows_first, tilekernels };

struct ForwardSpec {
  ForwardConvention convention = ForwardConvention::columns_first;
  double eps = 0;
};

std::string_view to_string(ForwardConvention convention);
// "columns_first" | "rows_first" | "tilekernels"; throws Error listing the valid names.
ForwardConvention parse_forward_convention(std::string_view text);
// The eps a convention uses when none is given: 1e-6 for tilekernels, 0 otherwise.
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
// Whether the last step normalises columns (so columns, not rows, sum to 1 exactly).
inline bool last_step_normalises_columns(ForwardConvention convention) {
  return convention != ForwardConvention::columns_first;
}
// "columns_first", "rows_first eps=1e-06", ...: for messages and logs.
std::string describe(const ForwardSpec& spec);

}  // namespace sinkgrad
