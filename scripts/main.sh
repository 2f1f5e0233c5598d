#!/usr/bin/env bash
# The main command: installs missing OS packages, configures, builds and runs the built-in
# demonstration (the solvers' gradients compared on non-converged and converged forwards).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
"${SINKGRAD_BUILD_DIR:-$root/build}/bin/sinkgrad" demo "$@"
