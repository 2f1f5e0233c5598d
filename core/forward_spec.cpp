#include "core/forward_spec.hpp"

#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace sinkgrad {

std::string_view to_string(ForwardConvention convention) {
  switch (convention) {
    case ForwardConvention::columns_first:
      return "columns_first";
    case ForwardConvention::rows_first:
      return "rows_first";
    case ForwardConvention::tilekernels:
      return "tilekernels";
  }
  return "unknown";
}

ForwardConvention parse_forward_convention(std::string_view text) {
  for (const auto convention : {ForwardConvention::columns_first, ForwardConvention::rows_first,
                                ForwardConvention::tilekernels})
    if (text == to_string(convention)) return convention;
  throw Error("unknown forward convention '" + std::string(text) +
              "' (use columns_first, rows_first or tilekernels)");
}

double default_forward_eps(ForwardConvention convention) {
  return convention == ForwardConvention::tilekernels ? 1e-6 : 0.0;
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
