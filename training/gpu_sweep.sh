#!/usr/bin/env bash
# The training study's CUDA preset on every GPU of the machine, one process per GPU, in parts of
# a time budget; run it again until it exits 0. From the repository root, with sinkgrad built
# with CUDA and the corpus (training/make_corpus.py, data/corpus/) present:
#   PYTHONPATH=BUILD/python bash training/gpu_sweep.sh [OUT_DIR [MINUTES [STUDY OPTIONS...]]]
# OUT_DIR (default out/training) gets one log per process and call (part<time>_<i>.h5), and
# their stderr; every process skips the runs complete in any log there (--done-logs) and takes
# every k-th of the rest (--shard i/k), so a later call may run on another number of GPUs.
# MINUTES (default 8: a device command may run 10) is each process's --budget-minutes: it
# finishes the run in progress after that. STUDY OPTIONS go to training_study.py (e.g.
# --autocast bf16 with another OUT_DIR: the bf16 arm is another study, in its own logs).
# At the end the table of every log in OUT_DIR is printed. Exit: 0 all runs done, 3 runs left,
# 1 a process failed. GPUS=k overrides the count of GPUs (nvidia-smi -L); DEVICE=cpu (with
# GPUS=k) tries the script on the cpu.
# With $OUT set (the device tool's folder of files that come back), this call's logs and the
# table are copied there: put them into OUT_DIR here and carry OUT_DIR to the next call.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
out=${1:-out/training}
minutes=${2:-8}
shift $(( $# < 2 ? $# : 2 ))
gpus=${GPUS:-$(nvidia-smi -L | grep -c '^GPU')}
[[ $gpus -ge 1 ]] || { echo "gpu_sweep.sh: no GPU" >&2; exit 1; }
python=${PYTHON:-python3}
mkdir -p "$out"
part=part$(date -u +%Y%m%dT%H%M%S)
pids=()
for ((i = 0; i < gpus; i++)); do
  CUDA_VISIBLE_DEVICES=$i "$python" training/training_study.py --device "${DEVICE:-cuda}" \
    --shard "$i/$gpus" --done-logs "$out/part*.h5" --output "$out/${part}_$i.h5" \
    --budget-minutes "$minutes" "$@" > "$out/${part}_$i.log" 2>&1 &
  pids+=($!)
done
status=0
for ((i = 0; i < gpus; i++)); do
  wait "${pids[$i]}"
  code=$?
  tail -n 2 "$out/${part}_$i.log"
  if [[ $code -eq 3 ]]; then
    [[ $status -eq 0 ]] && status=3
  elif [[ $code -ne 0 ]]; then
    echo "gpu_sweep.sh: process $i exited $code (log $out/${part}_$i.log)" >&2
    status=1
  fi
done
logs=("$out"/part*.h5)
"$python" training/training_results.py "${logs[@]}" > "$out/table.md" ||
  echo "gpu_sweep.sh: no complete run to tabulate yet" >&2
cat "$out/table.md"
if [[ -n ${OUT:-} ]]; then
  cp "$out/${part}"_*.h5 "$out/table.md" "$OUT/"
fi
exit $status
