#!/bin/sh
# Runs a Python script with the first python3 that has numpy (the system one first: a pyenv
# python3 on PATH may lack it). Exits 77 (skipped) when there is none.
#   run_with_numpy.sh SCRIPT [ARGS...]
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c "import numpy" 2>/dev/null; then
    exec "$candidate" "$@"
  fi
done
echo "skipped: no python3 with numpy"
exit 77
