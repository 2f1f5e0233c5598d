#!/usr/bin/env bash
# On the GPU machine: the unrolled team kernels of two source trees, A/B, without a build of the
# library (tests/benchmarks/unrolled_ab.cu compiled against each tree, one nvcc per size).
#   bash scripts/gpu_unrolled_ab.sh NEW.tar.gz BASE.tar.gz [ROUNDS]
# NEW and BASE: `git archive --format=tar.gz` of the two commits (made where git is). ROUNDS
# (default 3) runs of base then new; the table (scripts/gpu_unrolled_ab_summary.py) and the raw
# runs go to $OUT when it is set.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=${3:-3}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
work=$(mktemp -d)
flags=(-DSINKGRAD_WITH_CUDA -O3 -DNDEBUG -arch=sm_90 -std=c++20 -diag-suppress=554)
pids=()
for side in new base; do
  tree=$1
  [ $side = base ] && tree=$2
  mkdir -p "$work/$side/src" "$work/$side/obj"
  tar xzf "$tree" -C "$work/$side/src" || exit 2
  src=$work/$side/src
  ab=$here/../tests/benchmarks/unrolled_ab.cu
  for size in float:4 float:8 float:16 float:32 double:4 double:8 double:16 double:32; do
    "$nvcc" "${flags[@]}" -I"$src" -x cu -c "$ab" -DAB_REAL="${size%:*}" -DAB_N="${size#*:}" \
      -o "$work/$side/obj/${size/:/_}.o" &
    pids+=($!)
  done
  "$nvcc" "${flags[@]}" -x cu -c "$ab" -DAB_MAIN -o "$work/$side/obj/main.o" &
  pids+=($!)
  "$nvcc" "${flags[@]}" -I"$src" -c "$src/kernels/cuda/staging_policy.cpp" \
    -o "$work/$side/obj/staging_policy.o" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
for side in new base; do
  "$nvcc" -arch=sm_90 "$work/$side"/obj/*.o -o "$work/$side/ab" || exit 1
done
for i in $(seq "$rounds"); do
  for side in base new; do "$work/$side/ab" > "$out/${side}_$i.txt" || exit 1; done
done
python3 "$here/gpu_unrolled_ab_summary.py" "$out" "$rounds" | tee "$out/summary.md"
