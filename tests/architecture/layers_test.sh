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
    math/*) echo 1 ;;
    backend/*) echo 2 ;;
    forward/*) echo 3 ;;
    solvers/*) echo 4 ;;
    include/*|sinkgrad/*) echo 5 ;;
    experiments/*) echo 6 ;;
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
done < <(find core math backend forward solvers include experiments -type f \
           \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \
              -o -name '*.in' \) | sort)
echo "$checked includes checked, $bad pointing up"
[ "$bad" -eq 0 ]
