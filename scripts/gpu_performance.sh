#!/usr/bin/env bash
# On the GPU machine, after `bash .devdeps/device-build.sh /tmp/build`, from the repository root:
# the CUDA parity tests, sinkgrad_bench_cuda, sinkgrad beside the seeds' Triton kernels and
# torch.linalg.solve (experiments/compare_with_seeds.py), then beside TransformerEngine's fused
# mHC Sinkhorn at n = 4 (te_vs_sinkgrad_bench.py, step te); each comparison prints its table.
#   bash scripts/gpu_performance.sh /tmp/build [tests,bench,compare,te,conventions,carry,ncu,memcheck]
# The second argument picks steps (one command of the device tool has 10 minutes; conventions,
# the forward and unrolled of every forward convention, carry, the carry to M alone and
# cg_corrected with it under tilekernels, ncu, Nsight Compute's counters of one launch of
# each kernel in NCU_SPECS (n:bench name, default the kernels of docs/performance.md's last
# section), and memcheck, the whole CUDA suite under compute-sanitizer at the quick sizes, run
# only when named);
# tests and memcheck run the suite as gtest shards side by side on the one GPU (TEST_SHARDS,
# default 4, MEMCHECK_SHARDS, default 8: under memcheck the host side is the bottleneck), each
# shard stopped after TEST_SECONDS / MEMCHECK_SECONDS (default 540), CUDA_TESTS_FILTER a gtest
# filter; a shard that fails, is stopped or reports a memory error fails the step;
# COMPARE_ARGS adds options to compare_with_seeds.py (e.g. "--batch-divisor 4").
# Full logs go to $OUT when it is set (else to a temporary folder, named at the end).
set -uo pipefail  # no -e: every step runs; the exit status says whether any failed
build=$(cd "${1:-/tmp/build}" && pwd) || exit 2
steps=,${2:-tests,bench,compare,te},
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
logs=${OUT:-$(mktemp -d)}
mkdir -p "$logs"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
failed=0

# The CUDA suite in $2 gtest shards at once, each stopped after $3 s, behind the command prefix
# in the remaining arguments (none, or compute-sanitizer's); one line per shard, the shards' logs
# joined into $logs/$1.log. Returns 1 when a shard failed, was stopped or found a memory error.
suite_in_shards() {
  local name=$1 shards=$2 limit=$3 i code status=0
  shift 3
  local pids=()
  for ((i = 0; i < shards; ++i)); do
    # shellcheck disable=SC2086
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "$limit" "$@" \
      "$build/bin/sinkgrad_cuda_tests" ${CUDA_TESTS_FILTER:+--gtest_filter=$CUDA_TESTS_FILTER} \
      > "$logs/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  : > "$logs/$name.log"
  for ((i = 0; i < shards; ++i)); do
    wait "${pids[$i]}"
    code=$?
    local log=$logs/$name.$i.log verdict="ok"
    local ran passed skipped errors
    ran=$(grep -c '^\[ RUN      \]' "$log")
    passed=$(grep -c '^\[       OK \]' "$log")
    skipped=$(grep -c '^\[  SKIPPED \] .* ms)$' "$log")
    errors=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log")
    if [ "$code" = 124 ]; then
      verdict="STOPPED after $limit s in $(grep '^\[ RUN      \]' "$log" | tail -n 1 | cut -c 14-)"
    elif [ -n "$errors" ] && [ "$errors" != 0 ]; then
      verdict="$errors MEMORY ERRORS (exit $code)"
    elif [ "$code" != 0 ]; then
      verdict="FAILED (exit $code): $(grep '^\[  FAILED  \] .* ms)$' "$log" | cut -c 14- | tr '\n' ' ')"
    elif [ -z "$errors" ] && [ $# -gt 0 ]; then
      verdict="no ERROR SUMMARY from $1"
    fi
    echo "shard $i of $shards: $ran run, $passed passed, $skipped skipped${errors:+, $errors memory errors}: $verdict"
    [ "$verdict" = ok ] || status=1
    { echo "#### shard $i of $shards"; cat "$log"; } >> "$logs/$name.log"
    rm -f "$log"
  done
  return "$status"
}

if [[ $steps == *,tests,* ]]; then
  echo "== CUDA parity tests"
  suite_in_shards cuda_tests "${TEST_SHARDS:-4}" "${TEST_SECONDS:-540}" || failed=1
fi

if [[ $steps == *,memcheck,* ]]; then
  echo "== CUDA parity tests under compute-sanitizer memcheck, quick sizes"
  SINKGRAD_CUDA_TEST_QUICK=1 suite_in_shards memcheck "${MEMCHECK_SHARDS:-8}" \
    "${MEMCHECK_SECONDS:-540}" compute-sanitizer --tool memcheck --error-exitcode 3 || failed=1
fi

if [[ $steps == *,bench,* ]]; then  # Google Benchmark's own lines stay in the log
  echo "== sinkgrad_bench_cuda"
  "$build/bin/sinkgrad_bench_cuda" > "$logs/bench_cuda.log" 2>&1 || failed=1
  grep -E '^(device:|arithmetic peaks|\|)' "$logs/bench_cuda.log"
fi

if [[ $steps == *,conventions,* ]]; then  # the other forward conventions beside the default
  for forward in columns_first rows_first tilekernels:1e-6; do
    echo "== sinkgrad_bench_cuda, forward and unrolled, $forward"
    SINKGRAD_BENCH_FORWARD=$forward "$build/bin/sinkgrad_bench_cuda" \
      --benchmark_filter='^(forward|unrolled)/n(4|8|16)/' > "$logs/bench_$forward.log" 2>&1 ||
      failed=1
    grep -E '^(device:|arithmetic peaks|\|)' "$logs/bench_$forward.log"
  done
fi

if [[ $steps == *,carry,* ]]; then  # tilekernels (eps > 0): the carry alone, and CG carried
  echo "== sinkgrad_bench_cuda, the carry to M, tilekernels:1e-6"
  SINKGRAD_BENCH_FORWARD=tilekernels:1e-6 "$build/bin/sinkgrad_bench_cuda" \
    --benchmark_filter='^(carry|cg_corrected|unrolled)\[' > "$logs/bench_carry.log" 2>&1 ||
    failed=1
  grep -E '^(device:|arithmetic peaks|\|)' "$logs/bench_carry.log"
fi

if [[ $steps == *,ncu,* ]]; then  # one launch of each kernel at B = 2^20: what limits it
  default_specs="4:forward/n4/f32 8:forward/n8/f32 32:forward/n32/f32 4:unrolled/n4/f32
    16:unrolled/n16/f32 4:direct(corrected)/n4/f32 8:direct(corrected)/n8/f32
    4:cg_corrected/n4/f32 8:cg_corrected/n8/f32 16:cg_corrected/n16/f32 8:cg_corrected/n8/f64
    8:cg_plain(schur)/n8/f32"
  for spec in ${NCU_SPECS:-$default_specs}; do
    n=${spec%%:*}
    name=${spec#*:}
    filter=${name//(/\\(}
    filter="^${filter//)/\\)}/"  # the bench's names go on with /iterations:8
    log=$logs/ncu_$(tr -c 'a-zA-Z0-9\n' _ <<< "$name").log
    echo "== ncu $name"
    SINKGRAD_BENCH_SIZES=$n ncu --clock-control none --launch-skip 2 --launch-count 1 \
      --kernel-name regex:'team_kernel|per_matrix_kernel|carry_kernel' \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis \
      "$build/bin/sinkgrad_bench_cuda" --benchmark_filter="$filter" > "$log" 2>&1 || failed=1
    grep -E '^  [a-zA-Z].*\(|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issued Ipc Active|No Eligible|Executed Instructions  |Registers Per Thread|Achieved Occupancy' "$log" ||
      { failed=1; tail -n 3 "$log"; }
  done
fi

if [[ $steps == *,compare,* ]]; then  # its rows come twice (as measured, then the table)
  echo "== compare_with_seeds.py"
  log=$logs/compare_with_seeds.log
  # shellcheck disable=SC2086
  python3 experiments/compare_with_seeds.py --lib "$build/lib/libsinkgrad_c.so" \
    --seed-bench .devdeps/seed_kernels_bench.py ${COMPARE_ARGS:-} > "$log" 2>&1 || failed=1
  grep -E '^(device:|FAIL|seed kernels unavailable)' "$log"
  if grep -q '^copy ceiling .*vs_s001c' "$log"; then
    sed -n '/^copy ceiling .*vs_s001c/,$p' "$log"
  else
    tail -n 30 "$log"  # it stopped before its table: show why
  fi
fi

if [[ $steps == *,te,* ]]; then  # TE's Triton kernels, timing only: .devdeps/ or ../shared/reference/
  echo "== te_vs_sinkgrad_bench.py"
  te=""
  for dir in .devdeps ../shared/reference; do
    [ -f "$dir/te_vs_sinkgrad_bench.py" ] && [ -d "$dir/te_mhc" ] && te=$dir && break
  done
  if [ -z "$te" ]; then
    echo "te_vs_sinkgrad_bench.py and te_mhc/ not found in .devdeps/ or ../shared/reference/"
    failed=1
  else
    log=$logs/te_vs_sinkgrad.log
    python3 "$te/te_vs_sinkgrad_bench.py" --lib "$build/lib/libsinkgrad_c.so" \
      --capi capi --te "$te/te_mhc" > "$log" 2>&1 || { failed=1; tail -n 5 "$log"; }
    grep -E '^(device:|B=)' "$log"
    sed -n '/^copy ceiling .*minimum bytes/,$p' "$log"
  fi
fi

echo "logs: $logs$([ "$failed" = 0 ] || echo '; a step failed')"
exit "$failed"
