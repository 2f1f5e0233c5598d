#!/bin/sh
# `pip install` of the checkout as the README says, into a fresh venv over Debian's python3 (which
# has torch), reusing this build (SINKGRAD_CMAKE_BUILD_DIR: nothing is compiled twice), then used
# from outside the source tree with no PYTHONPATH or LD_LIBRARY_PATH:
#   1. sinkgrad.__version__ is the project's version; sinkgrad and the libsinkgrad_c it loads are
#      inside the venv;
#   2. the `sinkgrad` console script runs the packaged tool;
#   3. the PyTorch layer's tests (tests/torch) run against the installed package (reference.py
#      asserts, for each, that sinkgrad comes from the venv).
# Without python3-venv, pip, setuptools, wheel or torch: a skip (exit 77), a failure under CI
# (scripts/setup.sh installs them).
#   pip_install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR VERSION TEST_PLUGIN REFUSED_PLUGIN
set -eu
checkout=$1
build=$2
work=$3
version=$4
plugin=$5
refused=$6
python=/usr/bin/python3

missing() {
  if [ -n "${CI:-}" ]; then
    echo "FAILED: $1 (scripts/setup.sh installs python3-venv, python3-pip, python3-setuptools, python3-wheel, python3-torch)"
    exit 1
  fi
  echo "skipped: $1"
  exit 77
}
[ -x "$python" ] || missing "no $python"
"$python" -c "import setuptools, wheel, torch" 2>/dev/null || missing "$python lacks setuptools, wheel or torch"
"$python" -m pip --version > /dev/null 2>&1 || missing "$python has no pip"

rm -rf "$work"
mkdir -p "$work/user"
venv="$work/venv"
"$python" -m venv --system-site-packages "$venv" || missing "$python -m venv cannot make a venv (python3-venv)"
venv=$(cd "$venv" && pwd -P)

# Nothing may lead the installed package to the build tree or the checkout.
unset PYTHONPATH LD_LIBRARY_PATH SINKGRAD_C_LIB SINKGRAD_PLUGIN_PATH
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if ! SINKGRAD_CMAKE_BUILD_DIR="$build" "$venv/bin/python" -m pip install -v --no-build-isolation \
       --no-deps --no-index "$checkout" > "$work/pip.log" 2>&1; then
  tail -n 40 "$work/pip.log"
  echo "FAILED: pip install of $checkout"
  exit 1
fi
if grep -E "Building CXX object|Linking CXX" "$work/pip.log"; then
  echo "FAILED: pip compiled again instead of reusing $build"
  exit 1
fi

cd "$work/user"  # neither the checkout's python/ nor build/python is importable from here
printed=$("$venv/bin/python" -c "import sinkgrad; print(sinkgrad.__version__)")
[ "$printed" = "$version" ] || { echo "FAILED: sinkgrad.__version__ is '$printed', not $version"; exit 1; }
echo "installed sinkgrad $printed"
"$venv/bin/python" - "$venv" <<'PY'
import os
import sys

import sinkgrad
import sinkgrad.torch

venv = os.path.realpath(sys.argv[1]) + os.sep
library = sinkgrad.library().path
for name, path in (("sinkgrad.__file__", sinkgrad.__file__), ("libsinkgrad_c", library)):
    assert os.path.realpath(path).startswith(venv), f"{name} = {path} is outside {venv}"
package = os.path.dirname(os.path.realpath(sinkgrad.__file__))
assert os.path.dirname(os.path.realpath(library)) == os.path.join(package, "lib"), library
print(f"sinkgrad from {package}, libsinkgrad_c from {library}")
PY

"$venv/bin/sinkgrad" solvers --names > solvers.txt
grep -qx cg_corrected solvers.txt || { echo "FAILED: the sinkgrad console script"; cat solvers.txt; exit 1; }
"$venv/bin/sinkgrad" run --help > help.txt
grep -q "$venv/.*/sinkgrad/share/sinkgrad/studies" help.txt ||
  { echo "FAILED: the packaged tool does not name its bundled studies"; cat help.txt; exit 1; }
echo "console script sinkgrad: $(wc -l < solvers.txt) solvers, studies inside the package"

export SINKGRAD_TEST_PACKAGE_PREFIX="$venv" OMP_NUM_THREADS=2
tests="$checkout/tests/torch"
status=0
for test in layer_test.py safe_defaults_test.py module_test.py arguments_test.py \
            "failures_test.py $plugin $refused" "plugin_path_test.py $plugin $venv/bin/sinkgrad"; do
  # shellcheck disable=SC2086
  set -- $test
  script=$1
  shift
  echo "== $script (installed package)"
  "$venv/bin/python" "$tests/$script" "$@" || status=1
done
exit $status
