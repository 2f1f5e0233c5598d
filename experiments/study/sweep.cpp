#include "experiments/study/sweep.hpp"

#include <charconv>
#include <cstdio>

#include "io/hdf5.hpp"

namespace sinkgrad::study {

std::string options_text(const std::map<std::string, std::string>& options) {
  std::string text;
  for (const auto& [key, value] : options) text += (text.empty() ? "" : " ") + key + "=" + value;
  return text;
}

std::string forward_key(const ForwardSpec& forward) {
  if (is_default_forward(forward)) return "";
  char digits[32];
  const auto end = std::to_chars(digits, digits + sizeof digits, forward.eps).ptr;
  return " forward=" + std::string(to_string(forward.convention)) +
         " eps=" + std::string(digits, end);
}

std::uint64_t key_hash(const std::string& key) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : key) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string stable_id(const std::string& prefix, const std::string& key) {
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(key_hash(key)));
  return prefix + "_" + digits;
}

namespace {

InputSpec make_input(int n, index_t batch, const LogitSource& logits, std::uint64_t seed) {
  InputSpec input;
  input.n = n;
  input.batch = batch;
  input.logits = logits;
  input.seed = seed;
  input.key = "n=" + std::to_string(n) + " batch=" + std::to_string(batch) +
              " logits=" + logits.text + " seed=" + std::to_string(seed);
  input.id = stable_id("input", input.key);
  return input;
}

// Runs in the sweep, counted without expanding it (saturating at max_sweep_runs + 1).
std::uint64_t count_runs(const StudyDefinition& definition, std::size_t devices) {
  std::uint64_t option_sets = 0;
  for (const SolverSweep& solver : definition.solvers) option_sets += solver.option_sets.size();
  std::uint64_t inputs = 0;
  for (const LogitSource& logits : definition.logits)
    inputs += logits.from_file() ? 1 : definition.sizes.size();
  const std::uint64_t factors[] = {inputs,
                                   definition.seeds.size(),
                                   definition.iterations.size(),
                                   definition.precisions.size(),
                                   option_sets,
                                   devices};
  std::uint64_t count = 1;
  for (const std::uint64_t factor : factors) {
    if (factor == 0) return 0;
    count = count > (max_sweep_runs + 1) / factor ? max_sweep_runs + 1 : count * factor;
  }
  return count;
}

}  // namespace

Sweep expand_sweep(const StudyDefinition& definition, const std::vector<Device>& devices) {
  // Each run costs memory and a log group before anything is computed: refuse absurd sweeps.
  const std::uint64_t runs = count_runs(definition, devices.size());
  if (runs > max_sweep_runs)
    throw DefinitionError("the sweep has more than " + std::to_string(max_sweep_runs) +
                          " runs (inputs x seeds x T x precisions x solver options x devices); "
                          "split it into several definitions");
  Sweep sweep;
  for (const LogitSource& logits : definition.logits) {
    for (const std::uint64_t seed : definition.seeds) {
      if (logits.from_file()) {
        const h5::BatchInfo info = h5::inspect_batch(h5::File::open(logits.path), logits.dataset);
        sweep.inputs.push_back(
            make_input(info.n, std::min(definition.batch, info.batch), logits, seed));
        continue;
      }
      for (const int n : definition.sizes)
        sweep.inputs.push_back(make_input(n, definition.batch, logits, seed));
    }
  }
  const std::vector<ForwardSpec> forwards =
      definition.forwards.empty() ? std::vector<ForwardSpec>{ForwardSpec{}} : definition.forwards;
  for (std::size_t input = 0; input < sweep.inputs.size(); ++input)
    for (const int T : definition.iterations)
      for (const ForwardSpec& forward : forwards)
        for (const Precision precision : definition.precisions)
          for (const SolverSweep& solver : definition.solvers)
            for (const auto& options : solver.option_sets)
              for (const Device device : devices) {
                RunSpec run;
                run.input = input;
                run.T = T;
                run.forward = forward;
                run.precision = precision;
                run.solver = solver.name;
                run.options = options;
                run.device = device;
                run.key = sweep.inputs[input].key + " T=" + std::to_string(T) +
                          forward_key(forward) + " precision=" + std::string(to_string(precision)) +
                          " solver=" + solver.name + " options={" + options_text(options) +
                          "} device=" + std::string(to_string(device));
                run.id = stable_id("run", run.key);
                sweep.runs.push_back(std::move(run));
              }
  return sweep;
}

}  // namespace sinkgrad::study
