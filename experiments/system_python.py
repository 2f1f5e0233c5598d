"""The interpreter lookup of the experiments' Python scripts (docs/experiments.md, "Python"):
import what the script needs, or re-run it once with /usr/bin/python3 (where `python3` is a
pyenv or venv without Debian's packages), or exit naming the packages to install. Has no
dependencies, so that a script can call it before importing numpy or torch."""
import importlib
import os
import sys


def require_modules(modules, packages):
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError as error:
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("SINKGRAD_PYTHON_REEXEC"):
            os.environ["SINKGRAD_PYTHON_REEXEC"] = "1"
            os.execv(system, [system] + sys.argv)
        sys.exit(f"{os.path.basename(sys.argv[0])}: {error}; install {packages}")
