#pragma once
// What a solver plugin compiles against (docs/adding-a-solver.md): the library API, the
// plugin entry point (SINKGRAD_PLUGIN_ABI_VERSION, sinkgrad_plugin_register), SolverVariants
// (a templated CPU driver, and optionally a CUDA driver, per solver), the CPU batch loop
// (OpenMP over the matrices, one workspace per thread, status and iterations stored), and the
// per-matrix vocabulary of sinkgrad/per_matrix.hpp, usable on the host and the device.

#include "core/plugin_abi.hpp"         // IWYU pragma: export
#include "core/solver_variants.hpp"    // IWYU pragma: export
#include "kernels/cpu/batch_loop.hpp"  // IWYU pragma: export
#include "sinkgrad/per_matrix.hpp"     // IWYU pragma: export
#include "sinkgrad/sinkgrad.hpp"       // IWYU pragma: export
