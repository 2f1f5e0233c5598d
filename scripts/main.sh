#!/usr/bin/env bash
# The main command: installs missing OS packages, configures, builds and runs the built-in
# demonstration (the solvers' gradients compared on non-converged and converged forwards).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The demo needs the command-line tool (and the Python package beside it); test.sh builds the
# rest: the tests and benchmarks.
SINKGRAD_BUILD_TARGETS=${SINKGRAD_BUILD_TARGETS:-sinkgrad_cli sinkgrad_python} bash "$root/scripts/setup.sh"
"${SINKGRAD_BUILD_DIR:-$root/build}/bin/sinkgrad" demo "$@"
