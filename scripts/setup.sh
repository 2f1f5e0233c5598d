#!/usr/bin/env bash
# Installs what sinkgrad needs from the OS packages (when run as root with apt-get), then
# configures and builds into build/. Sourced by main.sh and test.sh; usable on its own.
#   SINKGRAD_BUILD_DIR  build directory (default: build)
#   SINKGRAD_CMAKE_ARGS extra CMake arguments (e.g. -DSINKGRAD_CUDA=OFF)
#   SINKGRAD_BUILD_TARGETS build only these targets (default: everything, the tests included)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${SINKGRAD_BUILD_DIR:-$root/build}

packages=(cmake ninja-build g++ pkg-config libeigen3-dev libhdf5-dev libboost-program-options-dev
          libgtest-dev libbenchmark-dev python3 python3-numpy python3-h5py python3-matplotlib
          python3-torch python3-venv python3-pip python3-setuptools python3-wheel)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "sinkgrad: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "sinkgrad: missing packages (install them as root): ${missing[*]}" >&2
  fi
fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# nvcc is usually outside PATH; the CUDA variants are built where it is found and a GPU is
# (-DSINKGRAD_CUDA=AUTO), or wherever it is found with -DSINKGRAD_CUDA=ON.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
# shellcheck disable=SC2086
cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${SINKGRAD_CMAKE_ARGS:-}
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$(nproc)" ${SINKGRAD_BUILD_TARGETS:+--target $SINKGRAD_BUILD_TARGETS}
