#!/usr/bin/env bash
# Here (no GPU needed): builds sinkgrad_bench_cuda of each commit for the H100 (sm_90) and packs
# it with the libraries it loads into .devdeps/bench/NAME.txz, for scripts/gpu_bench_rounds.sh
# on the GPU machine, which then builds nothing. Each build takes 7-15 minutes on 2 cores.
#   bash scripts/prebuilt_bench.sh NAME=COMMIT [NAME=COMMIT ...]    e.g. base=HEAD~1 head=HEAD
# NAME=DIR packs a CUDA build tree already built here instead (its bench and, when built, its
# sinkgrad_cuda_tests), with bin/ and lib/ beside them, so that the unpacked NAME/ is also a
# build tree for scripts/gpu_performance.sh (steps tests, memcheck, bench, ncu).
# The packs (about 25 MB each at sm_90, nearly all of it libsinkgrad.so's kernels, which xz -9e
# and strip do not shrink) travel with `carry: [".devdeps/bench"]`. The 64 MiB a call carries
# include the working tree, 28 MB of it, 26 MB of those docs/results/: one pack fits beside it,
# two only with docs/results/ moved out of the checkout for the call.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/.devdeps/bench
work=${SINKGRAD_PREBUILT_WORK:-/tmp/sinkgrad-prebuilt}
mkdir -p "$out/lib" "$work"
cp -L /usr/local/cuda/lib64/libcudart.so.13 "$(ldconfig -p | awk '/libbenchmark\.so\./ {print $NF; exit}')" \
  "$out/lib/"
for pair in "$@"; do
  name=${pair%%=*}
  commit=${pair#*=}
  rm -rf "${work:?}/pack/$name" && mkdir -p "$work/pack/$name"
  if [ -d "$commit" ]; then  # a build tree: what it holds, laid out for both scripts
    build=$(cd "$commit" && pwd)
    [ -x "$build/bin/sinkgrad_bench_cuda" ] ||
      { echo "$name: $build/bin/sinkgrad_bench_cuda not built" >&2; exit 1; }
    cp "$build"/bin/sinkgrad_bench_cuda "$build"/lib/*.so "$work/pack/$name/"
    [ ! -x "$build/bin/sinkgrad_cuda_tests" ] || cp "$build/bin/sinkgrad_cuda_tests" "$work/pack/$name/"
    ln -s . "$work/pack/$name/bin"
    ln -s . "$work/pack/$name/lib"
  else
    src=$work/$name
    rm -rf "$src" && mkdir -p "$src"
    git -C "$root" archive "$commit" | tar -x -C "$src"
    cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSINKGRAD_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 > "$work/$name.configure.log" 2>&1 ||
      { echo "$name: configure failed, see $work/$name.configure.log" >&2; exit 1; }
    ninja -C "$src/build" sinkgrad_bench_cuda > "$work/$name.build.log" 2>&1 ||
      { echo "$name: build failed, see $work/$name.build.log" >&2; exit 1; }
    cp "$src/build/bin/sinkgrad_bench_cuda" "$src"/build/lib/*.so "$work/pack/$name/"
  fi
  tar -C "$work/pack" -cf - "$name" | xz -T0 -6 > "$out/$name.txz"
  echo "$name ($commit): $(du -h "$out/$name.txz" | cut -f1)"
done
