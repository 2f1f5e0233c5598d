#!/usr/bin/env bash
# The folders are layers (docs/architecture.md): a file may include only from its own layer
# and the layers below it. Prints every include that points up and fails if there is one.
#   layers_test.sh SOURCE_ROOT
set -euo pipefail
root=${1:?source root}
cd "$root"
rank() {
  case "$1" in
    core/*) echo 0 ;;
    kernels/*) echo 1 ;;
    forward/*) echo 2 ;;
    solvers/*) echo 3 ;;
    include/*|sinkgrad/*) echo 4 ;;
    capi/*) echo 5 ;;
    io/*) echo 5 ;;
    experiments/*) echo 6 ;;
    cli/*) echo 7 ;;
    *) echo -1 ;;
  esac
}
bad=0
checked=0
while IFS= read -r file; do
  from=$(rank "$file")
  while IFS= read -r target; do
    to=$(rank "$target")
    checked=$((checked + 1))
    if [ "$to" -gt "$from" ]; then
      echo "layer violation: $file includes \"$target\""
      bad=$((bad + 1))
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find core kernels forward solvers include capi io experiments cli -type f \
           \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \
              -o -name '*.in' \) | sort)
echo "$checked includes checked, $bad pointing up"
[ "$bad" -eq 0 ]
