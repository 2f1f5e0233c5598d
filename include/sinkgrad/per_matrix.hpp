#pragma once
// The per-matrix vocabulary of a solver's mathematics, compiled for the host and, by nvcc, for
// the device: SINKGRAD_HD and the math overloads (exp_of, fma_of, quiet_nan, ...), SolveStatus
// and MatrixOutcome, the array helpers (all_finite, fill) and the log-domain forward steps
// (sinkhorn_step, column_potential, row_potential, write_log_domain_line).

#include "core/host_device.hpp"    // IWYU pragma: export
#include "core/status.hpp"         // IWYU pragma: export
#include "forward/log_domain.hpp"  // IWYU pragma: export
#include "kernels/numeric.hpp"     // IWYU pragma: export
