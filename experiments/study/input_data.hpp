#pragma once
// The numbers of one input: logits M drawn from its distribution (or read from its file) and
// upstream gradients G = dL/dR ~ normal(0, 1), both float64 and reproducible from the input's
// key alone (a self-contained SplitMix64 generator, the same on every platform).
//
// Distributions, per matrix entry unless said otherwise:
//   uniform(low, high)         M_ij ~ U[low, high)
//   normal(scale)              M_ij ~ N(0, scale^2)
//   near_permutation(s, noise) M = s * P_pi + noise * N(0, 1), pi a random permutation per matrix
//   file(PATH, DATASET)        the first B matrices of a (B, n, n) float32/float64 dataset

#include "core/batch.hpp"
#include "experiments/study/sweep.hpp"

namespace sinkgrad::study {

struct InputData {
  HostBatch<double> logits;
  HostBatch<double> grad_output;
};

InputData make_input_data(const InputSpec& input);

// The same numbers rounded to Real and back to double: what a run in that precision is given,
// so that its references describe exactly the problem it solved.
HostBatch<double> rounded_to(Precision precision, const HostBatch<double>& batch);

template <class Real>
HostBatch<Real> converted(const HostBatch<double>& batch);

}  // namespace sinkgrad::study
