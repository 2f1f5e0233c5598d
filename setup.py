"""The build glue of `pip install .` (pyproject.toml): the Python package of python/sinkgrad, and
in its folder what `cmake --install` puts into a prefix (lib/ with libsinkgrad and the C ABI
libsinkgrad_c that the package loads, bin/sinkgrad, include/, share/sinkgrad/ with the bundled
studies), so that the package finds its library next to itself and the `sinkgrad` console script
runs bin/sinkgrad. No scikit-build: CMake is run here, configure, build and install.

Environment:
  SINKGRAD_CMAKE_BUILD_DIR    an existing, configured build directory to install from (CI's: no
                              second compilation); it is brought up to date first, which is a
                              no-op when it is. Default: a fresh build directory, removed after.
  SINKGRAD_CMAKE_ARGS         more CMake arguments for the fresh build (scripts/setup.sh's
                              variable), e.g. "-DSINKGRAD_CUDA=ON"; by default CUDA is AUTO,
                              built when nvcc is found (also /usr/local/cuda/bin/nvcc) and the
                              machine has an NVIDIA GPU.
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: every CPU).

Setuptools' own build folder is a temporary directory, not build/, which is CMake's by the
README's convention (its build/lib holds the libraries), and nothing is written into the checkout.
"""
import atexit
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
# What the wheel needs built: the library, the C ABI, the tool and the generated _version.py.
TARGETS = ("sinkgrad", "sinkgrad_c", "sinkgrad_cli", "sinkgrad_python")


def project_version():
    """project(VERSION) of CMakeLists.txt: the one place the version is written."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as file:
        found = re.search(r"project\(\s*sinkgrad\s+VERSION\s+([0-9][0-9.]*)", file.read())
    if found is None:
        raise RuntimeError("no project(sinkgrad VERSION x.y.z) in CMakeLists.txt")
    return found.group(1)


def run(command, env=None):
    print("sinkgrad:", " ".join(shlex.quote(part) for part in command), flush=True)
    subprocess.run(command, check=True, env=env)


def cmake_environment():
    """The environment with nvcc on PATH where CUDA sits outside it (as scripts/setup.sh)."""
    env = dict(os.environ)
    if shutil.which("nvcc") is None and os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        env["PATH"] = "/usr/local/cuda/bin" + os.pathsep + env.get("PATH", "")
    return env


def configure(build_dir, env):
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", ROOT, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
         "-DBUILD_TESTING=OFF", *shlex.split(os.environ.get("SINKGRAD_CMAKE_ARGS", ""))], env)


def build_and_install(build_dir, package_dir, env):
    """The targets the wheel needs brought up to date, then `cmake --install` of everything but
    the Python package (component python: setuptools copies that) with the package's folder as
    the prefix."""
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    run(["cmake", "--build", build_dir, "--parallel", jobs, "--target", *TARGETS], env)
    run(["cmake", "--install", build_dir, "--prefix", package_dir, "--component", "Unspecified"],
        env)
    shutil.copy(os.path.join(build_dir, "python", "sinkgrad", "_version.py"), package_dir)
    write_location(package_dir)


def write_location(package_dir):
    """_location.py naming libsinkgrad_c relative to the package, wherever the build's libdir
    put it (lib/ unless CMAKE_INSTALL_LIBDIR says otherwise)."""
    for folder, _, files in os.walk(package_dir):
        if "libsinkgrad_c.so" in files:
            relative = os.path.relpath(os.path.join(folder, "libsinkgrad_c.so"), package_dir)
            break
    else:
        raise RuntimeError(f"cmake --install put no libsinkgrad_c.so into {package_dir}")
    with open(os.path.join(package_dir, "_location.py"), "w", encoding="utf-8") as file:
        file.write("# Written by setup.py: libsinkgrad_c inside this package.\nimport os\n\n"
                   "LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "
                   f"*{tuple(relative.split(os.sep))!r})\n")


class BuildPyWithCMake(build_py):
    """build_py: the Python sources, then the CMake project into the package's folder."""

    def run(self):
        super().run()
        package_dir = os.path.abspath(os.path.join(self.build_lib, "sinkgrad"))
        env = cmake_environment()
        reused = os.environ.get("SINKGRAD_CMAKE_BUILD_DIR")
        if reused:
            if not os.path.isfile(os.path.join(reused, "CMakeCache.txt")):
                sys.exit(f"sinkgrad: SINKGRAD_CMAKE_BUILD_DIR={reused} is not a configured "
                         "CMake build directory")
            build_and_install(os.path.abspath(reused), package_dir, env)
            return
        with tempfile.TemporaryDirectory(prefix="sinkgrad-cmake-") as fresh:
            configure(fresh, env)
            build_and_install(fresh, package_dir, env)


class BinaryDistribution(Distribution):
    """A platform wheel: it carries shared libraries and an executable built for this machine."""

    def has_ext_modules(self):
        return True


def setuptools_build_folder():
    folder = tempfile.mkdtemp(prefix="sinkgrad-setuptools-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


SETUPTOOLS_BUILD = setuptools_build_folder()
setup(
    version=project_version(),
    packages=["sinkgrad"],
    package_dir={"": "python"},
    cmdclass={"build_py": BuildPyWithCMake},
    distclass=BinaryDistribution,
    zip_safe=False,
    # egg_info too: it would write python/sinkgrad.egg-info into the checkout.
    options={"build": {"build_base": SETUPTOOLS_BUILD}, "egg_info": {"egg_base": SETUPTOOLS_BUILD}},
)
