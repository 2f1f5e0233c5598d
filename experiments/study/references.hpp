#pragma once
// The two gradients every solver is measured against, computed in float64 on the CPU by the
// `unrolled` solver (the exact reverse replay of the forward) from the logits and G the run
// was given:
//
//   unrolled_T  the exact gradient of the T-step forward that produced R: what the network's
//               forward pass really had.
//   converged   the gradient at the converged forward: the unrolled gradient at T_conv, the
//               first T in 64, 128, 256, ... (capped at converged_max_T) at which every
//               matrix's forward has max_j |c_j - 1| < converged_tolerance (1e-13 by default).
//               T_conv, the violation reached and whether the tolerance was met are recorded.
//               For a contracting Sinkhorn map the unrolled gradient tends to the implicit one
//               as T grows, so this is the gradient the implicit formulas aim at.

#include "core/batch.hpp"
#include "core/forward_spec.hpp"

namespace sinkgrad::study {

HostBatch<double> unrolled_reference(const HostBatch<double>& logits,
                                     const HostBatch<double>& grad_output, int T,
                                     const ForwardSpec& forward = {});

struct ConvergedReference {
  HostBatch<double> gradient;
  int T = 0;                 // T_conv
  double violation_max = 0;  // max over the batch of max_j |c_j - 1| at T_conv
  bool reached = false;      // violation_max < tolerance
};

// For a forward other than the default (whose violation need not tend to 0: an eps keeps the
// marginals near 1 - eps), T_conv is the first T at which R stopped changing: max |R_T -
// R_{T/2}| < tolerance; violation_max is then that change.
ConvergedReference converged_reference(const HostBatch<double>& logits,
                                       const HostBatch<double>& grad_output, double tolerance,
                                       int max_T, const ForwardSpec& forward = {});

// max over the batch of max_j |c_j - 1| after T forward iterations in float64 (NaN entries,
// from non-finite logits, are ignored).
double forward_violation(const HostBatch<double>& logits, int T);

}  // namespace sinkgrad::study
