#!/usr/bin/env bash
# Configures and builds a plugin project against an installed sinkgrad, with the project's
# warnings as errors and no CUDA compiler in reach (PATH without the toolkit, CUDACXX naming
# nothing): used for the CPU-only example plugin, which must need none.
#   build_plugin.sh CMAKE SOURCE BUILD GENERATOR PREFIX CXX "CXX_FLAGS"
set -euo pipefail
cmake=$1 source=$2 build=$3 generator=$4 prefix=$5 cxx=$6 flags=$7
export PATH=/usr/bin:/bin CUDACXX=/nonexistent/nvcc
"$cmake" -S "$source" -B "$build" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" "-DCMAKE_CXX_FLAGS=$flags -Werror" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$build"
