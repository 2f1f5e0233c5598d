#pragma once
// The computation of `sinkgrad grad` (grad_command.cpp): the request as checked from the
// command line, and the forward, solve and output file of one input.

#include <array>
#include <map>
#include <optional>
#include <string>

#include "core/backward_solver.hpp"
#include "core/forward_spec.hpp"
#include "core/status.hpp"
#include "core/types.hpp"
#include "io/hdf5.hpp"
#include "io/memory_budget.hpp"

namespace sinkgrad::cli {

inline constexpr const char* logits_name = "logits";
inline constexpr const char* grad_output_name = "grad_output";

struct GradRequest {
  std::string input;
  std::string output;
  std::string solver;
  std::map<std::string, std::string> options;
  int iterations = 20;
  std::optional<Precision> dtype;  // default: the precision of the input's logits
  Device device = Device::cpu;
  ForwardSpec forward;
};

struct GradSummary {
  index_t batch = 0;
  int n = 0;
  index_t non_finite_logits = 0;
  std::array<index_t, status_count> status_counts{};
  index_t saturated = 0;  // matrices with an entry of R exactly zero
  double forward_seconds = 0;
  double backward_seconds = 0;
};

// Everything solve_and_write allocates: logits, grad_output, R and dL/dM, the per-matrix
// vectors (status, iterations, the violation and the diagnostics), and a per-thread solver
// workspace: n x n matrices and, for a solver that replays the forward (`replays`:
// SolverInfo::needs_logits), the whole tape of the T steps.
MemoryEstimate grad_memory(const h5::BatchInfo& shape, Precision precision, int T, bool replays);

// Reads the inputs in precision Real, runs the forward and the solver, and writes the output
// file at output_path (Real: float or double).
template <class Real>
GradSummary solve_and_write(const GradRequest& request, const BackwardSolver& solver,
                            const h5::File& input, const std::string& output_path);

}  // namespace sinkgrad::cli
