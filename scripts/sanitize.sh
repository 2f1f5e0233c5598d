#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU build, CUDA
# off, in build-sanitize/): any memory error, leak or undefined behaviour fails its test.
# Too slow for every CI run (a sanitized build and suite take several times the plain one);
# run it before a release or after touching memory handling.
#   scripts/sanitize.sh [ctest arguments, e.g. -R cli]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SINKGRAD_SANITIZE_BUILD_DIR:-$root/build-sanitize}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSINKGRAD_SANITIZE=ON -DSINKGRAD_CUDA=OFF ${SINKGRAD_CMAKE_ARGS:-}
cmake --build "$build" -j "${SINKGRAD_JOBS:-$(nproc)}"
# Plugins are dlopen'ed and Python loads the C API: the runtime must come first for those.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:verify_asan_link_order=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "${SINKGRAD_JOBS:-$(nproc)}" "$@"
