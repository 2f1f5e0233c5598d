#!/usr/bin/env bash
# The test command: installs missing OS packages, configures, builds and runs every test.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
ctest --test-dir "${SINKGRAD_BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)"
