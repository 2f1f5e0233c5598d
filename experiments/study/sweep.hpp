#pragma once
// The Cartesian product a definition asks for, as a flat list of runs in a fixed order
// (input, T, precision, solver, options, device), each identified by a stable key: the text of
// its parameters. The key, and the group name derived from it, do not depend on the order of
// the definition's lists, so a resumed or extended sweep recognises the runs it already has.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/forward_spec.hpp"
#include "core/types.hpp"
#include "experiments/study/definition.hpp"

namespace sinkgrad::study {

// One batch of logits (and of upstream gradients G) that several runs share.
struct InputSpec {
  int n = 0;
  index_t batch = 0;
  LogitSource logits;
  std::uint64_t seed = 0;
  std::string key;  // "n=4 batch=64 logits=uniform(0, 4) seed=1"
  std::string id;   // "input_<16 hex digits of the key's hash>": its group in the log
};

struct RunSpec {
  std::size_t input = 0;  // index into Sweep::inputs
  int T = 0;
  ForwardSpec forward;  // the default one adds nothing to the key (older logs stay valid)
  Precision precision = Precision::float64;
  std::string solver;
  std::map<std::string, std::string> options;  // complete: every option of the solver
  Device device = Device::cpu;
  std::string key;  // input key + " T=5 precision=float64 solver=... options device=cpu"
  std::string id;   // "run_<16 hex digits of the key's hash>": its group in the log
};

struct Sweep {
  std::vector<InputSpec> inputs;
  std::vector<RunSpec> runs;
};

// A sweep larger than this is refused (DefinitionError) before it is expanded.
inline constexpr std::uint64_t max_sweep_runs = 100000;

// Expands the definition over the given devices. File sources are inspected for n and B.
Sweep expand_sweep(const StudyDefinition& definition, const std::vector<Device>& devices);

// "" for the default forward, else " forward=rows_first eps=0" (shortest round-trip eps).
std::string forward_key(const ForwardSpec& forward);

// "key=value key=value" in key order.
std::string options_text(const std::map<std::string, std::string>& options);

// 64-bit FNV-1a hash of the text (stable across platforms and runs).
std::uint64_t key_hash(const std::string& key);

// prefix + "_" + 16 hex digits of the 64-bit FNV-1a hash of key.
std::string stable_id(const std::string& prefix, const std::string& key);

}  // namespace sinkgrad::study
