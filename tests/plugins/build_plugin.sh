#!/usr/bin/env bash
# Configures and builds a plugin project against an installed sinkgrad, with the project's
# warnings as errors and no CUDA compiler in reach (PATH without any directory that holds nvcc,
# CUDACXX naming nothing): used for the CPU-only example plugin, which must need none.
#   build_plugin.sh CMAKE SOURCE BUILD GENERATOR PREFIX CXX "CXX_FLAGS" MAKE_PROGRAM
set -euo pipefail
cmake=$1 source=$2 build=$3 generator=$4 prefix=$5 cxx=$6 flags=$7
make_program=$8
path=""
IFS=: read -ra dirs <<< "$PATH"
for dir in "${dirs[@]}"; do [ -x "$dir/nvcc" ] || path=${path:+$path:}$dir; done
export PATH=$path CUDACXX=/nonexistent/nvcc
"$cmake" -S "$source" -B "$build" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" "-DCMAKE_CXX_FLAGS=$flags -Werror" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$build"
