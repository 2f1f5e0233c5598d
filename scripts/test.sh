#!/usr/bin/env bash
# The test command: installs missing OS packages, configures, builds and runs every test.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The CUDA variants are compiled wherever nvcc is, GPU or not, so that a CUDA compile error
# cannot pass the tests; SINKGRAD_CMAKE_ARGS comes after and may still say OFF.
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  export SINKGRAD_CMAKE_ARGS="-DSINKGRAD_CUDA=ON ${SINKGRAD_CMAKE_ARGS:-}"
fi
bash "$root/scripts/setup.sh"
ctest --test-dir "${SINKGRAD_BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)"
