#include "core/forward_spec.hpp"

#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace sinkgrad {

namespace {

struct ConventionName {
  std::string_view name;
  ForwardConvention convention;
};

// Every name --forward takes: the presets first (to_string's names), then the aliases of
// projects whose reference code computes a preset's forward (docs/math.md, "Who computes which
// forward").
constexpr ConventionName convention_names[] = {
    {"columns_first", ForwardConvention::columns_first},
    {"rows_first", ForwardConvention::rows_first},
    {"tilekernels", ForwardConvention::tilekernels},
    {"megatron_main", ForwardConvention::megatron_main},
    {"magi2", ForwardConvention::magi2},
    {"mhc_triton", ForwardConvention::mhc_triton},
    {"maxtext", ForwardConvention::tilekernels},
    {"megatron_dev", ForwardConvention::tilekernels},
};

}  // namespace

std::string_view to_string(ForwardConvention convention) {
  for (const ConventionName& entry : convention_names)
    if (entry.convention == convention) return entry.name;
  return "unknown";
}

std::string forward_convention_names() {
  std::string names;
  for (const ConventionName& entry : convention_names)
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

std::string forward_formula(ForwardConvention convention) {
  const ForwardRecipe r = forward_recipe(convention);
  const char* first = r.rows_first ? "rows" : "columns";
  const char* second = r.rows_first ? "columns" : "rows";
  const char* shifts[] = {"", " - row max", " - column max", " - global max"};
  std::ostringstream text;
  if (r.base == ForwardBase::softmax_rows)
    text << "softmax_rows(M) + eps, " << second << ", T - 1 times " << first << " then " << second;
  else
    text << (r.base == ForwardBase::abs
                 ? std::string("|M| + eps")
                 : "exp(M" + std::string(shifts[static_cast<int>(r.shift)]) + ")")
         << ", T times " << first << " then " << second;
  text << ", " << (r.guard == DenominatorGuard::max_eps ? "max(sum, eps)" : "sum + eps")
       << " (default eps " << r.default_eps << ")";
  return text.str();
}

std::string forward_conventions_help() {
  std::string text;
  for (const ConventionName& entry : convention_names) {
    text += (text.empty() ? "" : "; ") + std::string(entry.name);
    text += entry.name == to_string(entry.convention)
                ? ": " + forward_formula(entry.convention)
                : " = " + std::string(to_string(entry.convention));
  }
  return text;
}

ForwardConvention parse_forward_convention(std::string_view text) {
  for (const ConventionName& entry : convention_names)
    if (text == entry.name) return entry.convention;
  throw Error("unknown forward convention '" + std::string(text) + "' (use " +
              forward_convention_names() + ")");
}

double default_forward_eps(ForwardConvention convention) {
  return forward_recipe(convention).default_eps;
}

void check_forward_spec(const ForwardSpec& spec) {
  // At most float32's largest: the float32 forward converts eps, and an infinite one would
  // zero every normaliser.
  if (!std::isfinite(spec.eps) || spec.eps < 0 || spec.eps > limits::max_real) {
    std::ostringstream text;
    text << "the forward's eps must be finite and >= 0 (at most " << limits::max_real
         << ", finite in float32), got " << spec.eps;
    throw Error(text.str());
  }
}

ForwardSpec make_forward_spec(std::string_view convention, std::optional<double> eps) {
  ForwardSpec spec;
  spec.convention = parse_forward_convention(convention);
  spec.eps = eps ? *eps : default_forward_eps(spec.convention);
  check_forward_spec(spec);
  return spec;
}

std::string describe(const ForwardSpec& spec) {
  std::ostringstream text;
  text << to_string(spec.convention);
  if (spec.eps != 0) text << " eps=" << spec.eps;
  return text.str();
}

}  // namespace sinkgrad
