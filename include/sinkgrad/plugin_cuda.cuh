#pragma once
// The CUDA side of a solver plugin (compiled by nvcc, in plugins of a sinkgrad built with
// CUDA): cuda::launch_per_matrix runs a per-matrix function over a batch, one GPU thread per
// matrix, with its workspace in shared memory, and stores status and iterations.

#include "core/backward_problem.hpp"           // IWYU pragma: export
#include "kernels/cuda/per_matrix_launch.cuh"  // IWYU pragma: export
