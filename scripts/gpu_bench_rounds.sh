#!/usr/bin/env bash
# On the GPU machine: the benches packed by scripts/prebuilt_bench.sh, run in rounds until
# SECONDS have passed (each round runs every bench once, in an order that rotates from round
# to round), then each against the first (scripts/gpu_bench_compare.py: medians and per-round
# ratios). The tables and the runs' logs (logs.tgz) go to $OUT when it is set. A run that fails
# ends the rounds: the complete ones are still compared, and the exit status is 1.
#   bash scripts/gpu_bench_rounds.sh SECONDS FILTER BASE NEW [NEW ...]
#   e.g. bash scripts/gpu_bench_rounds.sh 420 '^(cg_corrected|direct[(]corrected[)])/' base head
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
packs=${SINKGRAD_BENCH_PACKS:-$here/../.devdeps/bench}  # where prebuilt_bench.sh put them
seconds=$1
filter=$2
shift 2
names=("$@")
out=${OUT:-$(mktemp -d)}
work=$(mktemp -d)
mkdir -p "$out/logs"
for name in "${names[@]}"; do tar -xJf "$packs/$name.txz" -C "$work" || exit 2; done
bench() { LD_LIBRARY_PATH="$work/$1:$packs/lib" "$work/$1/sinkgrad_bench_cuda" "${@:2}"; }
start=$(date +%s)
round=0
failed=0
while [ $(($(date +%s) - start)) -lt "$seconds" ]; do
  round=$((round + 1))
  for k in "${!names[@]}"; do
    name=${names[$(((k + round) % ${#names[@]}))]}
    if ! bench "$name" --benchmark_filter="$filter" > "$out/logs/${name}_$round.log" 2>&1; then
      # the rounds already complete are still compared (and the failed run's log kept)
      echo "$name failed in round $round: $out/logs/${name}_$round.log" >&2
      failed=1
      round=$((round - 1))
      break 2
    fi
  done
done
echo "$round rounds in $(($(date +%s) - start)) s"
for name in "${names[@]:1}"; do
  [ "$round" -gt 0 ] || break
  pairs=()
  for i in $(seq "$round"); do pairs+=("$out/logs/${names[0]}_$i.log" "$out/logs/${name}_$i.log"); done
  echo "## $name over ${names[0]}"
  python3 "$here/gpu_bench_compare.py" "${pairs[@]}" | tee "$out/${name}_over_${names[0]}.md"
done
tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
exit "$failed"
