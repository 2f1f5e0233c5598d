#!/bin/sh
# Installs the build into WORK/prefix and uses only the installed files, from WORK/user (outside
# the source and build trees):
#   1. `sinkgrad run --help` names the installed studies and plot.py;
#   2. share/sinkgrad/studies/smoke.ini runs (its log lands in the current directory);
#   3. `sinkgrad summary` tabulates it; the installed plot.py draws it;
#   4. the installed sinkgrad package loads the installed libsinkgrad_c and computes a forward.
# Steps 3 (plot) and 4 need a python3 with numpy, h5py and matplotlib: without one the test
# stops there with exit code 77 (skipped) after the steps that ran.
#   install_test.sh CMAKE BUILD_DIR WORK_DIR
set -eu
cmake=$1
build=$2
work=$3

rm -rf "$work"
mkdir -p "$work/user"
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log"
prefix=$(cd "$work/prefix" && pwd)
share="$prefix/share/sinkgrad"
for file in bin/sinkgrad include/sinkgrad/sinkgrad_c.h share/sinkgrad/plot.py \
            share/sinkgrad/studies/smoke.ini share/sinkgrad/studies/headline.ini \
            share/sinkgrad/data/logits.h5 share/sinkgrad/python/sinkgrad/_capi.py; do
  [ -f "$prefix/$file" ] || { echo "not installed: $file"; exit 1; }
done
ls "$prefix"/lib*/libsinkgrad_c.so "$prefix"/lib*/*/libsinkgrad_c.so 2>/dev/null | grep -q . ||
  { echo "not installed: libsinkgrad_c.so"; exit 1; }

cd "$work/user"
"$prefix/bin/sinkgrad" run --help > help.txt
grep -q "$share/studies/\*.ini" help.txt || { echo "run --help does not name $share/studies"; cat help.txt; exit 1; }
grep -q "python3 $share/plot.py" help.txt || { echo "run --help does not name $share/plot.py"; exit 1; }

"$prefix/bin/sinkgrad" run "$share/studies/smoke.ini" --device cpu --quiet
[ -s smoke.h5 ] || { echo "the smoke study wrote no smoke.h5 in the current directory"; exit 1; }
"$prefix/bin/sinkgrad" summary smoke.h5 > summary.txt
runs=$(($(wc -l < summary.txt) - 1))
[ "$runs" -ge 20 ] || { echo "summary lists $runs runs"; cat summary.txt; exit 1; }
echo "installed sinkgrad ran smoke.ini from $share/studies: $runs runs"

python=""
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] &&
     "$candidate" -c "import numpy, h5py, matplotlib" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no python3 with numpy, h5py and matplotlib for the plot and the wrapper"
  exit 77
fi

"$python" "$share/plot.py" smoke.h5 --out-dir plots > written.txt
count=$(wc -l < written.txt)
[ "$count" -ge 4 ] || { echo "the installed plot.py wrote $count files"; exit 1; }
while read -r png; do
  [ -s "$png" ] || { echo "plot.py listed $png but it is missing or empty"; exit 1; }
done < written.txt
echo "installed plot.py wrote $count PNG files"

PYTHONPATH="$share/python" SINKGRAD_C_LIB= "$python" - "$prefix" <<'PY'
import os
import sys

import numpy as np
from sinkgrad import _capi

prefix = os.path.realpath(sys.argv[1])
lib = _capi.Library()
assert os.path.realpath(lib.path).startswith(prefix + os.sep), f"loaded {lib.path}, not the installed library"
M = np.random.default_rng(3).normal(size=(5, 4, 4))
R = lib.forward_numpy(M, 50)
# 50 Sinkhorn steps of these logits: rows and columns sum to 1 within 1e-6.
assert np.allclose(R.sum(axis=2), 1, atol=1e-6) and np.allclose(R.sum(axis=1), 1, atol=1e-6), R
grad, status, _ = lib.solve_numpy("unrolled", "", M, R, np.ones_like(R), 50)
assert (status == 0).all() and np.isfinite(grad).all()
try:
    lib.solve_numpy("no_such_solver", "", None, R, R, 3)
    raise SystemExit("an unknown solver was accepted")
except _capi.SinkgradError as error:
    assert "no_such_solver" in str(error), error
print(f"installed sinkgrad._capi loaded {lib.path}: forward and unrolled ok")
PY
