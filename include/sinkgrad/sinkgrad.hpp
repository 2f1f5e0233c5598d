#pragma once
// sinkgrad's library API: batches of n x n matrices, the Sinkhorn forward, the backward solvers
// created by name from the registry, and plugins loaded at run time.
//
//   sinkgrad::HostBatch<double> M(B, n), G(B, n), R(B, n), dM(B, n);
//   sinkgrad::sinkhorn_forward<double>(M.view(), T, R.view(), nullptr);
//   auto solver = sinkgrad::SolverRegistry::global().create("cg_corrected");
//   solver->solve(sinkgrad::BackwardProblem<double>{M.view(), R.view(), G.view(), T},
//                 sinkgrad::BackwardResult<double>{dM.view(), status, iterations});

#include "core/backward_problem.hpp"     // IWYU pragma: export
#include "core/backward_solver.hpp"      // IWYU pragma: export
#include "core/batch.hpp"                // IWYU pragma: export
#include "core/error.hpp"                // IWYU pragma: export
#include "core/plugin_loader.hpp"        // IWYU pragma: export
#include "core/solver_options.hpp"       // IWYU pragma: export
#include "core/solver_registry.hpp"      // IWYU pragma: export
#include "core/status.hpp"               // IWYU pragma: export
#include "core/types.hpp"                // IWYU pragma: export
#include "forward/sinkhorn_forward.hpp"  // IWYU pragma: export
