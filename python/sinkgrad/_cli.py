"""The `sinkgrad` console script of a pip install: runs the command-line tool that the wheel
carries inside the package (bin/sinkgrad, beside lib/ and share/sinkgrad as `cmake --install`
lays them out, so that it finds its libraries, bundled studies and plot.py)."""
import os
import sys


def executable():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "sinkgrad")


def main():
    tool = executable()
    if not os.access(tool, os.X_OK):
        sys.exit(f"sinkgrad: this copy of the package has no command-line tool ({tool}); it is "
                 "in pip installs (pip install .) and in build/bin or PREFIX/bin otherwise")
    # exec: the tool's exit code, signals and terminal are the caller's, with nothing between.
    os.execv(tool, [tool] + sys.argv[1:])


if __name__ == "__main__":
    main()
