"""SINKGRAD_PLUGIN_PATH seen by the PyTorch layer as by the command-line tool: the test plugin
(tests/torch/scaled_copy_plugin.cpp, built by CMake into a folder of its own) named as a file or
as its folder, among empty entries, gives a backward that sgt.sinkhorn runs; a refused entry is
the reason of every solver lookup, naming the variable; the CLI lists the same solvers and
refuses the same path. Each case is a fresh interpreter: the library reads the variable once.

    PYTHONPATH=build/python python3 tests/torch/plugin_path_test.py PLUGIN [SINKGRAD_CLI]
"""
import os
import subprocess
import sys
import unittest

PLUGIN = CLI = None
SOLVER = "torch_test_scaled_copy"

# Run in the child: the plugin's backward through the layer, then the solvers it knows.
CHILD = """
import sys
import torch
import sinkgrad
import sinkgrad.torch as sgt
x = torch.rand(3, 4, 4, dtype=torch.float64, requires_grad=True)
G = torch.randn(3, 4, 4, dtype=torch.float64)
try:
    sgt.sinkhorn(x, 3, backward=sys.argv[1], options={"scale": 2.5}).backward(G)
except Exception as error:
    print(f"{type(error).__name__}: {error}")
else:
    print("equal" if torch.equal(x.grad, 2.5 * G) else "different")
print(",".join(sinkgrad.library().solver_names()))
"""


def child(plugin_path, backward=SOLVER):
    """The child's two lines: the backward's outcome and the solvers it knows."""
    env = dict(os.environ)
    env.pop("SINKGRAD_PLUGIN_PATH", None)
    if plugin_path is not None:
        env["SINKGRAD_PLUGIN_PATH"] = plugin_path
    done = subprocess.run([sys.executable, "-c", CHILD, backward], env=env, capture_output=True,
                          text=True, timeout=120)
    lines = done.stdout.splitlines()
    if len(lines) < 1:
        raise AssertionError(f"the child printed nothing: {done.stderr}")
    return lines[0], lines[1] if len(lines) > 1 else done.stderr


def cli_solvers(plugin_path):
    env = dict(os.environ, SINKGRAD_PLUGIN_PATH=plugin_path)
    done = subprocess.run([CLI, "solvers", "--names"], env=env, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, ",".join(done.stdout.split()), done.stderr


class PluginPath(unittest.TestCase):
    def test_without_the_variable_the_solver_is_unknown(self):
        outcome, known = child(None)
        self.assertRegex(outcome, rf"^ValueError: sinkgrad.torch.sinkhorn: unknown backward "
                         rf"'{SOLVER}'; known: auto, ")
        self.assertNotIn(SOLVER, known.split(","))

    def test_a_file_entry(self):
        outcome, known = child(PLUGIN)
        self.assertEqual(outcome, "equal")
        self.assertIn(SOLVER, known.split(","))
        if CLI is not None:
            code, cli_known, stderr = cli_solvers(PLUGIN)
            self.assertEqual((code, cli_known), (0, known), stderr)

    def test_a_folder_entry_among_empty_ones(self):
        outcome, known = child(f"::{os.path.dirname(PLUGIN)}:")
        self.assertEqual(outcome, "equal")
        self.assertIn(SOLVER, known.split(","))

    def test_a_refused_entry_is_every_lookups_reason(self):
        missing = "/no/such/plugin.so"
        for backward in (SOLVER, "unrolled"):  # built-ins too: the CLI refuses every command
            outcome, known = child(f"{PLUGIN}:{missing}", backward)
            self.assertEqual(outcome, f"ValueError: sinkgrad.torch.sinkhorn: plugin '{missing}': "
                             "no such file (from SINKGRAD_PLUGIN_PATH)")
            self.assertIn("SinkgradError: sinkgrad_solver_names: plugin", known)
        if CLI is not None:
            code, _, stderr = cli_solvers(f"{PLUGIN}:{missing}")
            self.assertNotEqual(code, 0)
            self.assertIn(f"plugin '{missing}': no such file (from SINKGRAD_PLUGIN_PATH)", stderr)

    def test_load_plugin_of_a_path_entry_is_harmless(self):
        code = ("import sinkgrad.torch as sgt, sys; sgt.load_plugin(sys.argv[1]); "
                "print(sgt.sinkhorn.__name__)")
        env = dict(os.environ, SINKGRAD_PLUGIN_PATH=PLUGIN)
        done = subprocess.run([sys.executable, "-c", code, PLUGIN], env=env, capture_output=True,
                              text=True, timeout=120)
        self.assertEqual((done.returncode, done.stdout.strip()), (0, "sinkhorn"), done.stderr)


if __name__ == "__main__":
    PLUGIN = os.path.realpath(sys.argv.pop(1))
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        CLI = sys.argv.pop(1)
    unittest.main()
