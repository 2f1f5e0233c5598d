#!/bin/sh
# Runs a Python script with the first python3 that has torch (the system one first: a pyenv
# python3 on PATH may lack it). Without one: a failure under CI (CI set; scripts/setup.sh
# installs python3-torch), elsewhere a skip (exit 77) that says what to install.
#   run_with_torch.sh SCRIPT [ARGS...]
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c "import torch" 2>/dev/null; then
    exec "$candidate" "$@"
  fi
done
if [ -n "${CI:-}" ]; then
  echo "FAILED: no python3 with torch (scripts/setup.sh installs python3-torch)"
  exit 1
fi
echo "skipped: no python3 with torch (install python3-torch to run the PyTorch layer's tests)"
exit 77
