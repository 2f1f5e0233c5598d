#!/bin/sh
# The smoke study through the real binary, its log checked with h5py against the documented
# schema, then experiments/plot.py on it; every PNG must be written.
#   plot_test.sh SINKGRAD_BINARY SOURCE_DIR WORK_DIR
# Exits 77 (skipped) when no python3 with numpy, h5py and matplotlib is found.
set -eu
sinkgrad=$1
source_dir=$2
work=$3

python=""
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] &&
     "$candidate" -c "import numpy, h5py, matplotlib" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no python3 with numpy, h5py and matplotlib"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
"$sinkgrad" run "$source_dir/experiments/smoke.ini" --output "$work/smoke.h5" --device cpu
"$python" "$source_dir/tests/experiments/check_log_schema.py" "$work/smoke.h5"
"$python" "$source_dir/experiments/plot.py" "$work/smoke.h5" --out-dir "$work/plots" > "$work/written.txt"
count=0
while read -r png; do
  [ -s "$png" ] || { echo "plot.py listed $png but it is missing or empty"; exit 1; }
  count=$((count + 1))
done < "$work/written.txt"
# error vs T against both references, time vs error, and CG convergence figures.
[ "$count" -ge 4 ] || { echo "plot.py wrote only $count files"; exit 1; }
for kind in error_vs_T_unrolled error_vs_T_converged time_vs_error cg_cg_corrected; do
  grep -q "$kind" "$work/written.txt" || { echo "no $kind figure"; exit 1; }
done
echo "plot.py wrote $count PNG files"
