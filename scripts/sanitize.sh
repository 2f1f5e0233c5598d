#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU build, CUDA
# off, in build-sanitize/): any memory error, leak or undefined behaviour fails its test.
# Too slow for every CI run (a sanitized build and suite take several times the plain one);
# run it before a release or after touching memory handling.
#   scripts/sanitize.sh [ctest arguments, e.g. -R cli]
#
# ctest runs twice, with the same arguments:
#   1. every test not labelled python_process, ASAN_OPTIONS detect_leaks=1: the sanitized
#      executables link the sanitizer runtimes first, and the plugins they dlopen use them.
#   2. the tests labelled python_process (capi.*, torch.*, install.*: the library loaded into
#      python3 through ctypes), with LD_PRELOAD="libasan.so libstdc++.so" (the building
#      compiler's, from -print-file-name) and detect_leaks=0. python3 is not linked to ASan:
#      without the preload libasan arrives only with the sanitized library, after the
#      interpreter (torch) has loaded libstdc++, so a string that libstdc++ allocated with
#      glibc's malloc is freed by ASan's operator delete ("bad-free" destroying the path from
#      fs::canonical in load_plugin; an artifact of the load order, not a bug of the code).
#      libstdc++ is preloaded too because python3 does not link it: ASan's __cxa_throw
#      interceptor finds no real __cxa_throw at start-up and stops on a CHECK. Leaks are not
#      checked there: what CPython, numpy and torch still hold at exit is not ours. ctest runs
#      the fixture plugins.install again in this run (torch.installed_package requires it).
# libubsan needs no preload (it replaces no allocator and intercepts nothing; it comes with the
# library). With the ASan runtime first in both runs, verify_asan_link_order stays on.
# Clean on Debian 12 (GCC 12, torch 1.13, no GPU), 2026-11-28: run 1 318 tests, 317 passed, 1
# skipped (cli.GradCommand.CudaDeviceMatchesTheCpu: built without CUDA); run 2 the 14 tests
# without torch.training_*, torch.cuda skipped (no CUDA device), plugins.install counted in both.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SINKGRAD_SANITIZE_BUILD_DIR:-$root/build-sanitize}
jobs=${SINKGRAD_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSINKGRAD_SANITIZE=ON -DSINKGRAD_CUDA=OFF ${SINKGRAD_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"

# The runtimes the sanitized library was linked against: those of the compiler that built it.
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
preload=()
for name in libasan.so libstdc++.so; do
  file=$("$cxx" -print-file-name="$name")
  [ -f "$file" ] || { echo "sanitize.sh: $cxx has no $name to preload into python3" >&2; exit 1; }
  preload+=("$file")
done

native_options=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
ASAN_OPTIONS=$native_options \
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE python_process "$@" || status=1
echo "python_process tests: LD_PRELOAD=\"${preload[*]}\""
# The training study's tests (torch.training_*) are left out of this run: the study's smoke and
# resume tests train for hundreds of steps, which under ASan with the preload takes longer than
# their 300 s timeout (the layer calls they make are the ones torch.layer, torch.failures and
# torch.module run here); the corpus test runs groff, which the preloaded runtime breaks, and
# loads no sinkgrad code.
LD_PRELOAD="${preload[*]}${LD_PRELOAD:+ $LD_PRELOAD}" ASAN_OPTIONS=$native_options:detect_leaks=0 \
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -L python_process \
  -E 'torch[.]training_' "$@" || status=1
[ "$status" -eq 0 ] && echo "sanitize.sh: both runs clean" || echo "sanitize.sh: failures above"
exit "$status"
