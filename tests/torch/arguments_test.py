"""sinkgrad.torch's errors in Python terms: every refusal names the Python function, the
argument and its true value, never a C function of libsinkgrad_c; integers are checked in their
C type before ctypes could wrap them; n = 0 and load_plugin's paths; sparse logits, default_eps's
names, a SolveStats before any backward and a SINKGRAD_C_LIB that cannot be loaded.

    PYTHONPATH=build/python python3 tests/torch/arguments_test.py
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

from reference import import_layer, inputs

sgt = import_layer()
from sinkgrad import _capi  # noqa: E402

C_NAME = re.compile(r"\bsinkgrad_[a-z_]+\b")  # a C function of sinkgrad_c.h


class Iterations(unittest.TestCase):
    def setUp(self):
        self.M, _ = inputs(2, 3, seed=90)

    def test_out_of_range_names_the_true_value(self):
        for T in (0, -1, -(2**31), 2**31, 2**32 + 1, 2**63, sgt.MAX_ITERATIONS + 1):
            with self.assertRaisesRegex(ValueError, rf"^sinkgrad.torch.sinkhorn: iterations must "
                                        rf"be from 1 to 1000000, got {T}$"):
                sgt.sinkhorn(self.M, T)

    def test_non_integers_are_type_errors(self):
        for T, name in ((True, "bool"), (2.0, "float"), ("3", "str"), (None, "NoneType"),
                        (torch.tensor(3), "Tensor")):
            with self.assertRaisesRegex(TypeError, rf"iterations must be an int, got {name}"):
                sgt.sinkhorn(self.M, T)

    def test_the_bounds_and_integer_types_are_accepted(self):
        import numpy as np
        for T in (1, sgt.MAX_ITERATIONS, np.int64(4)):
            R = sgt.sinkhorn(self.M[:1, :1, :1], T)
            self.assertTrue(torch.equal(R, torch.ones(1, 1, 1, dtype=torch.float64)))


class RememberedSettings(unittest.TestCase):
    """The layer checks plain settings once and remembers them: a remembered setting must not
    let through a value that only compares equal to it (True == 1, False == 0 == 0.0)."""

    def test_equal_values_of_other_types_are_still_refused(self):
        M, _ = inputs(2, 3, seed=91)
        sgt.sinkhorn(M, 1)
        sgt.sinkhorn(M, 3, forward="columns_first", eps=0)
        sgt.sinkhorn(M, 3, forward="columns_first", eps=0.0)
        with self.assertRaisesRegex(TypeError, "iterations must be an int, got bool"):
            sgt.sinkhorn(M, True)
        with self.assertRaisesRegex(TypeError, "eps must be a number or None, got bool"):
            sgt.sinkhorn(M, 3, forward="columns_first", eps=False)

    def test_a_remembered_setting_gives_the_same_gradient(self):
        M, G = inputs(3, 4, seed=92)
        grads = []
        for _ in range(3):
            x = M.clone().requires_grad_(True)
            R = sgt.sinkhorn(x, 5, backward="cg_corrected", forward="tilekernels", eps=1e-3)
            grads.append(torch.autograd.grad(R, x, G)[0])
        self.assertTrue(all(torch.equal(grads[0], g) for g in grads[1:]))


class Shapes(unittest.TestCase):
    def test_n_zero_is_the_documented_value_error(self):
        for shape in ((0, 0), (2, 0, 0), (0, 0, 0), (3, 2, 0, 0)):
            with self.assertRaisesRegex(ValueError, r"^sinkgrad.torch.sinkhorn: logits must have "
                                        r"shape \(\.\.\., n, n\) with n >= 1"):
                sgt.sinkhorn(torch.zeros(shape), 3)

    def test_an_empty_batch_is_fine(self):
        self.assertEqual(sgt.sinkhorn(torch.zeros(0, 3, 3), 3).shape, (0, 3, 3))


class NoCNames(unittest.TestCase):
    def test_unknown_backward_lists_the_known_ones(self):
        M, _ = inputs(2, 3, seed=91)
        with self.assertRaises(ValueError) as caught:
            sgt.sinkhorn(M, 3, backward="cg")
        known = _capi.library().solver_names()
        self.assertEqual(str(caught.exception), "sinkgrad.torch.sinkhorn: unknown backward 'cg'; "
                         f"known: {', '.join(known)}")
        for name in ("unrolled", "auto", "cg_plain", "cg_corrected", "direct"):
            self.assertIn(name, known)

    def test_no_refusal_names_a_c_function(self):
        M, _ = inputs(2, 3, seed=92)
        calls = [dict(backward="cg"), dict(backward="cg_corrected", options={"tolerence": 1}),
                 dict(backward="cg_corrected", options={"max_iterations": -3}),
                 dict(backward="cg_plain", options={"system": "cholesky"}),
                 dict(backward="unrolled\0x"), dict(forward="TE"), dict(eps=-1.0),
                 dict(on_failure="retry"), dict(options={"a": "b\0"})]
        for kwargs in calls:
            with self.assertRaises((TypeError, ValueError)) as caught:
                sgt.sinkhorn(M, 3, **kwargs)
            message = str(caught.exception)
            self.assertTrue(message.startswith("sinkgrad.torch.sinkhorn: "), message)
            self.assertIsNone(C_NAME.search(message), message)
        for path in ("/no/such/plugin.so", os.devnull):
            with self.assertRaises(sgt.SinkgradError) as caught:
                sgt.load_plugin(path)
            self.assertTrue(str(caught.exception).startswith("sinkgrad.load_plugin: plugin "))
            self.assertIsNone(C_NAME.search(str(caught.exception)))

    def test_the_binding_keeps_the_c_name_apart(self):
        error = _capi.SinkgradError("sinkgrad_check_solver: unknown solver 'cg'")
        self.assertEqual((error.function, error.reason),
                         ("sinkgrad_check_solver", "unknown solver 'cg'"))
        error = _capi.SinkgradError("cannot load libsinkgrad_c from x: y")
        self.assertEqual((error.function, error.reason), (None, str(error)))


class BindingIntegers(unittest.TestCase):
    """_capi checks batch, n and T in their C types: ctypes would wrap them without a word."""

    def test_wrapping_values_are_refused(self):
        lib = _capi.library()
        M = torch.zeros(1, 1, 1, dtype=torch.float64)
        for batch, n, T, pattern in (
                (1, 1, 2**32 + 1, r"T \(an int of the C ABI\) must be from -2147483648 to "
                 r"2147483647, got 4294967297"),
                (1, 1, 2**31, r"T \(an int of the C ABI\) .*, got 2147483648"),
                (1, 2**32 + 1, 3, r"n \(an int of the C ABI\) .*, got 4294967297"),
                (2**64 + 1, 1, 3, r"batch \(an int64_t of the C ABI\) must be from "
                 r"-9223372036854775808 to 9223372036854775807, got 18446744073709551617")):
            with self.assertRaisesRegex(ValueError, pattern):
                lib.forward(_capi.CPU, 8, batch, n, T, M.data_ptr(), M.data_ptr())
        with self.assertRaisesRegex(TypeError, r"T \(an int of the C ABI\) must be an int, got "
                                    r"float"):
            lib.forward(_capi.CPU, 8, 1, 1, 3.0, M.data_ptr(), M.data_ptr())
        with self.assertRaisesRegex(ValueError, r"device \(an int of the C ABI\) .*, got "
                                    r"4294967296"):
            lib.check_solver("unrolled", "", 2**32, 8)  # would be 0, the cpu, through ctypes
        # Values that fit are the library's to judge, with its messages.
        with self.assertRaisesRegex(sgt.SinkgradError,
                                    r"sinkgrad_forward_convention: T must be >= 1, got 0"):
            lib.forward(_capi.CPU, 8, 1, 1, 0, M.data_ptr(), M.data_ptr())


class LoadPluginPaths(unittest.TestCase):
    def test_none_and_other_types_are_type_errors(self):
        for path in (None, 3, ["a.so"]):
            with self.assertRaisesRegex(TypeError, r"^sinkgrad.load_plugin: a plugin path must "
                                        r"be a str or os.PathLike, got"):
                sgt.load_plugin(path)
        self.assertFalse(os.path.exists("None"))

    def test_an_embedded_nul_is_a_value_error(self):
        for path in ("plugin.so\0/etc/passwd", b"a\0b", pathlib.Path("a\0b")):
            with self.assertRaisesRegex(ValueError, r"^sinkgrad.load_plugin: a plugin path "
                                        r"cannot contain NUL"):
                sgt.load_plugin(path)

    def test_path_like_reaches_the_loader(self):
        with self.assertRaisesRegex(sgt.SinkgradError, r"'/no/such/dir/x.so': no such file"):
            sgt.load_plugin(pathlib.Path("/no/such/dir/x.so"))


class SparseLogits(unittest.TestCase):
    def test_sparse_layouts_are_refused_in_the_layers_terms(self):
        M, _ = inputs(2, 3, seed=93)
        for sparse in (M.to_sparse(), M[0].to_sparse(), M[0].to_sparse_csr()):
            with self.assertRaisesRegex(ValueError, rf"^sinkgrad.torch.sinkhorn: logits of "
                                        rf"layout {sparse.layout} are not supported"):
                sgt.sinkhorn(sparse, 3)
        with self.assertRaisesRegex(ValueError, r"^sinkgrad.torch.sinkhorn: logits of layout"):
            sgt.Sinkhorn(3)(M.to_sparse())


class DefaultEps(unittest.TestCase):
    def test_names_that_are_not_str_are_type_errors(self):
        for name in (None, 5, b"maxtext", ["maxtext"]):
            with self.assertRaisesRegex(TypeError, r"^sinkgrad.torch.default_eps: a forward "
                                        r"convention name must be a str"):
                sgt.default_eps(name)

    def test_an_embedded_nul_is_a_value_error(self):
        # ctypes would pass "maxtext" and answer for it.
        with self.assertRaisesRegex(ValueError, r"^sinkgrad.torch.default_eps: .*cannot contain "
                                    r"NUL"):
            sgt.default_eps("maxtext\0junk")

    def test_an_unknown_name_is_a_value_error_without_a_c_name(self):
        with self.assertRaises(ValueError) as caught:
            sgt.default_eps("sinkhorn")
        message = str(caught.exception)
        self.assertTrue(message.startswith("sinkgrad.torch.default_eps: unknown forward "
                                           "convention 'sinkhorn'"), message)
        self.assertIsNone(C_NAME.search(message), message)
        self.assertEqual(sgt.default_eps("maxtext"), sgt.default_eps("tilekernels"))


class StatsBeforeBackward(unittest.TestCase):
    """A SolveStats no backward has filled claims neither a failure nor a count."""

    def test_failed_and_counts_raise_until_a_backward_ran(self):
        stats = sgt.SolveStats()
        M, G = inputs(2, 3, seed=94)
        sgt.sinkhorn(M, 3, stats=stats)  # no backward: nothing ran that has a status
        for method in (stats.failed, stats.counts):
            with self.assertRaisesRegex(RuntimeError, rf"^sinkgrad.torch.SolveStats."
                                        rf"{method.__name__}: no backward has filled this "
                                        "SolveStats yet"):
                method()
        self.assertIn("no backward", repr(stats))
        M.requires_grad_(True)
        sgt.sinkhorn(M, 3, stats=stats).backward(G)
        self.assertFalse(bool(stats.failed().any()))
        self.assertEqual(stats.counts()["ok"], 2)


# sgt.sinkhorn and sgt.default_eps in a child python with SINKGRAD_C_LIB set: the process's one
# library is loaded once, and a damaged one must not crash this test run.
CALL_WITH_LIBRARY = """import torch
import sinkgrad.torch as sgt
for call in (lambda: sgt.sinkhorn(torch.rand(2, 3, 3), 5), lambda: sgt.default_eps("maxtext")):
    try:
        call()
    except Exception as error:
        print(f"{type(error).__name__}: {error}")
"""


class UnloadableLibrary(unittest.TestCase):
    def calls_with_library(self, path):
        package = os.path.dirname(os.path.dirname(os.path.abspath(_capi.__file__)))
        env = dict(os.environ, SINKGRAD_C_LIB=path,
                   PYTHONPATH=os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
        result = subprocess.run([sys.executable, "-c", CALL_WITH_LIBRARY], env=env, timeout=120,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(result.returncode, 0, result.stdout)
        return result.stdout.splitlines()

    def test_a_library_problem_is_a_sinkgrad_error_not_a_value_error(self):
        directory = tempfile.mkdtemp(prefix="sinkgrad_torch_library_")
        self.addCleanup(shutil.rmtree, directory)
        truncated = os.path.join(directory, "libsinkgrad_c.so")
        with open(_capi.library().path, "rb") as source, open(truncated, "wb") as copy:
            copy.write(source.read(1000))  # an interrupted copy: SIGBUS inside dlopen once
        for path, reason in ((truncated, "it is cut short or damaged"),
                             (os.path.join(directory, "missing.so"), "")):
            lines = self.calls_with_library(path)
            with self.subTest(path=path):
                self.assertEqual(len(lines), 2, lines)
                for line, where in zip(lines, ("sinkhorn", "default_eps")):
                    self.assertTrue(line.startswith(
                        f"SinkgradError: sinkgrad.torch.{where}: cannot load libsinkgrad_c from "
                        f"{path}: {reason}"), line)


if __name__ == "__main__":
    unittest.main()
