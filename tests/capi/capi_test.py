"""libsinkgrad_c through ctypes on the cpu: the forward and the unrolled gradient against an
independent numpy float64 implementation (itself checked by a central finite difference),
options reaching the solver, and errors coming back as codes with the library's message.

    python3 capi_test.py path/to/libsinkgrad_c.so
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from sinkgrad._capi import CPU, FLOAT32, SinkgradError  # noqa: E402
from sinkgrad._capi import Library as SinkgradC  # noqa: E402
import sinkgrad._capi  # noqa: E402

LIB = None


def forward_tape(M, T):
    """exp(M), the 2T normalised iterates and their normalisers (column step, then row step)."""
    P = np.exp(M)
    X, tape = P, []
    for _ in range(T):
        s = X.sum(-2, keepdims=True)
        X = X / s
        tape.append((-2, X, s))
        s = X.sum(-1, keepdims=True)
        X = X / s
        tape.append((-1, X, s))
    return P, X, tape


def unrolled_numpy(M, T, G):
    """Reverse of the 2T steps: for Y = X / s(X), dX = (dY - sum(dY * Y)) / s; dM = P * dP."""
    P, _, tape = forward_tape(M, T)
    d = G
    for axis, Y, s in reversed(tape):
        d = (d - (d * Y).sum(axis, keepdims=True)) / s
    return P * d


def relative(a, b):
    return np.linalg.norm(a - b, axis=(1, 2)) / np.linalg.norm(b, axis=(1, 2))


def inputs(B, n, T, seed):
    rng = np.random.default_rng(seed)
    M = rng.random((B, n, n)) * 4.0  # the seeds' benchmark logits
    G = rng.standard_normal((B, n, n))
    R = forward_tape(M, T)[1]
    return M, R, G


class NumpyReference(unittest.TestCase):
    def test_unrolled_matches_a_central_difference(self):
        for n, T in [(3, 1), (5, 4), (8, 20)]:
            M, _, G = inputs(4, n, T, seed=n)
            D = np.random.default_rng(7).standard_normal(M.shape)
            h = 1e-6
            loss = lambda X: (forward_tape(X, T)[1] * G).sum(axis=(1, 2))  # noqa: E731
            fd = (loss(M + h * D) - loss(M - h * D)) / (2 * h)
            exact = (unrolled_numpy(M, T, G) * D).sum(axis=(1, 2))
            np.testing.assert_allclose(exact, fd, rtol=1e-6, atol=1e-8)


class ThroughTheCAbi(unittest.TestCase):
    def test_forward_matches_numpy(self):
        for dtype, tol in [(np.float64, 1e-13), (np.float32, 1e-5)]:
            M, R, _ = inputs(16, 6, 20, seed=1)
            R_lib = LIB.forward_numpy(M.astype(dtype), 20)
            self.assertEqual(R_lib.dtype, dtype)
            R_ref = forward_tape(M.astype(dtype).astype(np.float64), 20)[1]
            self.assertLess(relative(R_lib.astype(np.float64), R_ref).max(), tol)

    def test_unrolled_matches_numpy(self):
        for n, T in [(2, 1), (3, 1), (4, 20), (8, 20), (16, 3)]:
            for dtype, tol in [(np.float64, 1e-12), (np.float32, 2e-5)]:
                M, R, G = inputs(32, n, T, seed=100 + n)
                M, R, G = M.astype(dtype), R.astype(dtype), G.astype(dtype)
                grad, status, iterations = LIB.solve_numpy("unrolled", "", M, R, G, T)
                ref = unrolled_numpy(M.astype(np.float64), T, G.astype(np.float64))
                with self.subTest(n=n, T=T, dtype=dtype.__name__):
                    self.assertEqual(grad.dtype, dtype)
                    self.assertTrue((status == 0).all(), status)
                    self.assertLess(relative(grad.astype(np.float64), ref).max(), tol)

    def test_unrolled_one_by_one_is_zero(self):
        # R = [[1]] whatever M is: the gradient vanishes.
        M, R, G = inputs(4, 1, 3, seed=3)
        grad, status, _ = LIB.solve_numpy("unrolled", "", M, R, G, 3)
        self.assertTrue((status == 0).all(), status)
        self.assertLess(np.abs(grad).max(), 1e-15)

    def test_options_reach_the_solver(self):
        M, R, G = inputs(8, 8, 3, seed=5)
        # One CG step cannot solve an 8 x 8 system: not_converged (1) after 1 iteration.
        _, status, iterations = LIB.solve_numpy("cg_corrected", "max_iterations=1", None, R, G, 3)
        self.assertTrue((status == 1).all(), status)
        self.assertTrue((iterations == 1).all(), iterations)
        _, status, iterations = LIB.solve_numpy(
            "cg_plain", " system = block , max_iterations=64,tolerance=1e-13", None, R, G, 3)
        self.assertTrue((status == 0).all(), status)
        self.assertTrue((iterations > 1).all(), iterations)

    def test_empty_batch_is_fine(self):
        empty = np.empty((0, 4, 4))
        grad, status, _ = LIB.solve_numpy("unrolled", "", empty, empty, empty, 5)
        self.assertEqual(grad.shape, (0, 4, 4))
        self.assertEqual(status.shape, (0,))

    def expect_error(self, call, *fragments):
        with self.assertRaises(SinkgradError) as caught:
            call()
        for fragment in fragments:
            self.assertIn(fragment, str(caught.exception))

    def test_errors_come_back_as_codes_and_messages(self):
        M, R, G = inputs(2, 4, 3, seed=9)
        self.expect_error(lambda: LIB.solve_numpy("no_such_solver", "", M, R, G, 3),
                          "sinkgrad_solve", "unknown solver 'no_such_solver'", "cg_corrected",
                          "cg_plain", "direct", "unrolled")
        self.expect_error(lambda: LIB.solve_numpy("cg_corrected", "maxiter=3", M, R, G, 3),
                          "maxiter", "max_iterations")
        self.expect_error(lambda: LIB.solve_numpy("cg_corrected", "max_iterations", M, R, G, 3),
                          "not of the form key=value")
        self.expect_error(lambda: LIB.solve_numpy("unrolled", "", None, R, G, 3), "logits")
        self.expect_error(lambda: LIB.forward_numpy(M, 0), "T must be >= 1")
        null = 0
        self.expect_error(lambda: LIB.forward(CPU, 2, 1, 4, 3, null, null), "dtype must be")
        self.expect_error(lambda: LIB.forward(5, FLOAT32, 1, 4, 3, null, null), "device must be")
        self.expect_error(lambda: LIB.forward(CPU, FLOAT32, 1, 4, 3, null, null), "logits is NULL")
        # The raw code and message, without the binding's exception.
        grad = np.empty_like(R)
        code = LIB._lib.sinkgrad_solve(b"nope", None, CPU, 8, 1, 4, 3, None, R.ctypes.data,
                                       G.ctypes.data, grad.ctypes.data, None, None)
        self.assertNotEqual(code, 0)
        self.assertIn("unknown solver 'nope' (available: ", LIB.last_error())

    def test_outputs_that_overlap_inputs_are_refused(self):
        # A solver reads R, G and M while it writes: in place, a CPU solve once overwrote the G
        # it had yet to read and reported valid matrices as invalid_input.
        M, R, G = inputs(2, 4, 3, seed=10)
        solve = LIB._lib.sinkgrad_solve  # 64-bit pointers: the binding declares only _convention
        p = ctypes.c_void_p
        solve.restype = ctypes.c_int
        solve.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int64, ctypes.c_int, ctypes.c_int, p, p, p, p, p, p]
        status = np.full(2, -1, dtype=np.int32)
        iterations = np.empty(2, dtype=np.int32)
        for solver in ("unrolled", "cg_corrected", "direct"):
            for name, grad in (("grad_output (G)", G), ("forward_output (R)", R),
                               ("logits (M)", M)):
                before = grad.copy()
                code = solve(solver.encode(), None, CPU, 8, 2, 4, 3, M.ctypes.data,
                             R.ctypes.data, G.ctypes.data, grad.ctypes.data,
                             status.ctypes.data, iterations.ctypes.data)
                self.assertNotEqual(code, 0, (solver, name))
                self.assertIn(f"sinkgrad_solve: grad_logits overlaps {name}", LIB.last_error())
                self.assertTrue(np.array_equal(grad, before))  # refused before anything ran
            self.assertTrue(np.all(status == -1))
        # status inside the gradient's memory: outputs must not overlap each other either.
        grad = np.empty_like(R)
        code = solve(b"unrolled", None, CPU, 8, 2, 4, 3, M.ctypes.data, R.ctypes.data,
                     G.ctypes.data, grad.ctypes.data, grad.ctypes.data + 8,
                     iterations.ctypes.data)
        self.assertNotEqual(code, 0)
        self.assertIn("grad_logits overlaps status", LIB.last_error())
        # The diagnostics are outputs too, written before the solve: over R they would change
        # the matrices the solver reads.
        grad = np.empty_like(R)
        for position, name in ((0, "row_violation"), (2, "relative_residual")):
            diagnostics = [None, None, None, None]
            diagnostics[position] = R.ctypes.data
            with self.assertRaisesRegex(SinkgradError, f"{name} overlaps forward_output"):
                LIB.backward("cg_corrected", "", CPU, 8, 2, 4, 3, M.ctypes.data, R.ctypes.data,
                             G.ctypes.data, grad.ctypes.data, status.ctypes.data,
                             iterations.ctypes.data, tuple(diagnostics), 0)

    def test_a_forward_whose_r_overlaps_its_logits_is_refused(self):
        # R one matrix after the logits: each slice's R was written over logits another slice
        # had yet to read, and the call returned 0 with a wrong R.
        B, n, T = 6, 4, 3
        M = np.random.default_rng(12).random((B + 1, n, n)) * 4.0
        expected = forward_tape(M[:B], T)[1]
        for name, convention in (("columns_first", None), ("tilekernels", 1e-6)):
            for shift in (0, 1, B - 1):  # in place, and shifted by one matrix or by B - 1
                data = M.copy()
                before = data.copy()
                with self.assertRaisesRegex(SinkgradError, "forward: R overlaps logits"):
                    LIB.forward(CPU, 8, B, n, T, data.ctypes.data,
                                data.ctypes.data + shift * n * n * 8,
                                (name, np.nan if convention is None else convention))
                self.assertTrue(np.array_equal(data, before))  # refused before anything ran
        # Adjacent but apart is no overlap: R just past the logits' last byte.
        data = np.concatenate([M[:B], np.empty_like(M[:B])])
        LIB.forward(CPU, 8, B, n, T, data.ctypes.data, data[B:].ctypes.data)
        self.assertLess(np.max(np.abs(data[B:] - expected)), 1e-14)

    def test_many_option_sets_keep_solving(self):
        # The kept solvers are bounded (older ones dropped past 256): solving goes on, with the
        # same gradient from a solver made again.
        M, R, G = inputs(2, 4, 3, seed=11)
        first = LIB.solve_numpy("cg_corrected", "tolerance=1e-9", M, R, G, 3)
        for k in range(300):
            LIB.check_solver("cg_corrected", f"tolerance={1e-9 * (1 + k * 1e-6)!r}", CPU, 8)
        again = LIB.solve_numpy("cg_corrected", "tolerance=1e-9", M, R, G, 3)
        self.assertTrue(np.array_equal(first[0], again[0]))

    def backward(self, solver, options, M, R, G, T, replace):
        grad = np.full_like(R, 7.0)  # a value no gradient here has: what was not written
        status = np.empty(R.shape[0], dtype=np.int32)
        iterations = np.empty(R.shape[0], dtype=np.int32)
        LIB.backward(solver, options, CPU, R.itemsize, R.shape[0], R.shape[1], T,
                     None if M is None else M.ctypes.data, R.ctypes.data, G.ctypes.data,
                     grad.ctypes.data, status.ctypes.data, iterations.ctypes.data,
                     (None, None, None, None), replace)
        return grad, status, iterations

    def test_one_call_backward_replaces_failed_matrices(self):
        """sinkgrad_backward with replace 1: a CG cut off after one iteration fails on every
        matrix (not_converged), and every gradient is the exact unrolled one (numpy float64);
        with replace 0 they keep the CG iterate; the statuses say what the solver did."""
        M, R, G = inputs(6, 8, 3, seed=21)
        exact = unrolled_numpy(M, 3, G)
        options = "max_iterations=1"
        grad, status, iterations = self.backward("cg_corrected", options, M, R, G, 3, 1)
        self.assertTrue((status == 1).all(), status)
        self.assertTrue((iterations == 1).all(), iterations)
        self.assertLess(relative(grad, exact).max(), 1e-12)
        kept, status, _ = self.backward("cg_corrected", options, M, R, G, 3, 0)
        self.assertTrue((status == 1).all(), status)
        self.assertGreater(relative(kept, exact).min(), 1e-3)
        # A converged solve replaces nothing: the same bits as the plain solve.
        grad, status, _ = self.backward("cg_corrected", "", M, R, G, 3, 1)
        alone, alone_status, _ = LIB.solve_numpy("cg_corrected", "", M, R, G, 3)
        self.assertTrue((status == 0).all() and (alone_status == 0).all(), status)
        np.testing.assert_array_equal(grad, alone)

    def test_replace_failures_replaces_every_status_but_a_success(self):
        """sinkgrad_replace_failures: matrices marked 0 (ok) or 5 (fallback) keep their gradient;
        every other status, codes no solve writes included, gets the exact unrolled gradient
        (numpy float64); the statuses are not written."""
        f = LIB._lib.sinkgrad_replace_failures
        p = ctypes.c_void_p
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                      ctypes.c_char_p, ctypes.c_double, p, p, p, p]
        codes = [0, 5, 1, 2, 3, 4, 6, 42, -1]
        M, _, G = inputs(len(codes), 5, 4, seed=23)
        exact = unrolled_numpy(M, 4, G)
        grad = np.full_like(M, 7.0)
        status = np.array(codes, dtype=np.int32)
        self.assertEqual(f(CPU, 8, len(codes), 5, 4, b"columns_first", 0.0, M.ctypes.data,
                           G.ctypes.data, grad.ctypes.data, status.ctypes.data), 0,
                         LIB.last_error())
        self.assertEqual(status.tolist(), codes)
        self.assertTrue((grad[:2] == 7.0).all())
        self.assertLess(relative(grad[2:], exact[2:]).max(), 1e-12)

    def test_one_call_backward_refuses_before_writing(self):
        M, R, G = inputs(2, 4, 3, seed=22)
        for replace, M_given, fragments in (
                (2, M, ("sinkgrad_backward", "replace must be 0", "got 2")),
                (1, None, ("sinkgrad_backward", "logits", "fallback replays"))):
            grad = np.full_like(R, 7.0)
            with self.assertRaises(SinkgradError) as caught:
                LIB.backward("cg_corrected", "", CPU, 8, 2, 4, 3,
                             None if M_given is None else M_given.ctypes.data, R.ctypes.data,
                             G.ctypes.data, grad.ctypes.data, np.empty(2, np.int32).ctypes.data,
                             np.empty(2, np.int32).ctypes.data, (None, None, None, None),
                             replace)
            for fragment in fragments:
                self.assertIn(fragment, str(caught.exception))
            self.assertTrue((grad == 7.0).all())


def convention_tape(M, T, convention, eps):
    """docs/math.md's formula ("Forward conventions") on explicit matrices: base, then
    X / (X.sum(axis) + eps)."""
    if convention == "tilekernels":
        S = np.exp(M - M.max(-1, keepdims=True))
        S = S / S.sum(-1, keepdims=True)
        X, axes = S + eps, [-2] + [-1, -2] * (T - 1)
    else:
        S, X = None, np.exp(M)
        axes = ([-1, -2] if convention == "rows_first" else [-2, -1]) * T
    tape = []
    for axis in axes:
        d = X.sum(axis, keepdims=True) + eps
        tape.append((axis, X, d))
        X = X / d
    return S, X, tape


def convention_unrolled(M, T, G, convention, eps):
    """Reverse mode of the tape: for Y = X / (s(X) + eps), dX = dY / d - sum(dY * X / d^2)."""
    S, _, tape = convention_tape(M, T, convention, eps)
    g = G
    for axis, X, d in reversed(tape):
        g = g / d - (g * X).sum(axis, keepdims=True) / d**2
    if S is None:
        return np.exp(M) * g
    return S * (g - (g * S).sum(-1, keepdims=True))


class Conventions(unittest.TestCase):
    CASES = [("rows_first", 0.0), ("rows_first", 1e-3), ("tilekernels", None),
             ("tilekernels", 1e-2), ("columns_first", 1e-3)]

    def test_reference_matches_a_central_difference(self):
        for convention, eps in self.CASES:
            e = 1e-6 if eps is None else eps
            M, _, G = inputs(3, 5, 3, seed=11)
            D = np.random.default_rng(8).standard_normal(M.shape)
            h = 1e-6
            loss = lambda X: (convention_tape(X, 3, convention, e)[1] * G).sum(axis=(1, 2))  # noqa: E731,E501
            fd = (loss(M + h * D) - loss(M - h * D)) / (2 * h)
            exact = (convention_unrolled(M, 3, G, convention, e) * D).sum(axis=(1, 2))
            with self.subTest(convention=convention, eps=eps):
                np.testing.assert_allclose(exact, fd, rtol=1e-6, atol=1e-8)

    def test_forward_and_unrolled_match_numpy(self):
        for convention, eps in self.CASES:
            e = 1e-6 if eps is None else eps
            for n, T in [(1, 1), (4, 3), (8, 20)]:
                M, _, G = inputs(16, n, T, seed=200 + n)
                R = LIB.forward_numpy(M, T, (convention, eps))
                R_ref = convention_tape(M, T, convention, e)[1]
                grad, status, _ = LIB.solve_numpy("unrolled", "", M, R, G, T, (convention, eps))
                ref = convention_unrolled(M, T, G, convention, e)
                with self.subTest(convention=convention, eps=eps, n=n, T=T):
                    self.assertLess(np.abs(R - R_ref).max(), 1e-14)
                    self.assertTrue((status == 0).all(), status)
                    self.assertLess(np.abs(grad - ref).max(), 1e-10 * max(np.abs(ref).max(), 1))

    def test_bad_conventions_are_refused(self):
        M, R, G = inputs(2, 4, 3, seed=9)
        self.expect_error(lambda: LIB.forward_numpy(M, 3, ("sinkhorn", 0.0)),
                          "unknown forward convention 'sinkhorn'", "rows_first", "tilekernels")
        for eps in (-1.0, float("inf")):
            self.expect_error(lambda: LIB.forward_numpy(M, 3, ("rows_first", eps)),
                              "eps must be finite and >= 0")
            self.expect_error(
                lambda: LIB.solve_numpy("unrolled", "", M, R, G, 3, ("tilekernels", eps)),
                "eps must be finite and >= 0")
        # NaN is refused by the C ABI itself; the binding reads None and NaN as the default.
        out = np.empty_like(M)
        self.assertNotEqual(LIB._lib.sinkgrad_forward_convention(
            CPU, 8, 2, 4, 3, b"rows_first", float("nan"), M.ctypes.data, out.ctypes.data), 0)
        self.assertIn("eps must be finite and >= 0", LIB.last_error())

    def test_default_eps_is_the_librarys_table(self):
        self.assertEqual(LIB.default_eps("tilekernels"), 1e-6)
        self.assertEqual(LIB.default_eps("columns_first"), 0.0)
        self.assertEqual(LIB.default_eps("rows_first"), 0.0)
        self.expect_error(lambda: LIB.default_eps("sinkhorn"), "unknown forward convention")
        # NULL names columns_first here as in every function that takes a convention.
        eps = ctypes.c_double(-1.0)
        self.assertEqual(LIB._lib.sinkgrad_default_eps(None, ctypes.byref(eps)), 0)
        self.assertEqual(eps.value, LIB.default_eps("columns_first"))
        self.assertNotEqual(LIB._lib.sinkgrad_default_eps(b"tilekernels", None), 0)
        self.assertIn("eps is required", LIB.last_error())
        M = inputs(2, 4, 3, seed=10)[0]
        for eps in (None, float("nan")):
            np.testing.assert_array_equal(LIB.forward_numpy(M, 3, ("tilekernels", eps)),
                                          LIB.forward_numpy(M, 3, ("tilekernels", 1e-6)))

    def test_default_eps_refuses_names_it_cannot_pass(self):
        for name in (None, 5, b"maxtext", ["maxtext"]):
            with self.assertRaisesRegex(TypeError, "a forward convention name must be a str"):
                LIB.default_eps(name)
        # ctypes would pass "maxtext" and answer for it.
        with self.assertRaisesRegex(ValueError, "cannot contain NUL"):
            LIB.default_eps("maxtext\0junk")

    expect_error = ThroughTheCAbi.expect_error


# Library(path) in a child python, so that a library that crashes the loader (SIGBUS inside
# dlopen) fails a test instead of killing the run: "loaded" or the SinkgradError it raised.
LOAD = """import sys
from sinkgrad._capi import Library, SinkgradError
try:
    Library(sys.argv[1])
except SinkgradError as error:
    print("SinkgradError:", error)
else:
    print("loaded")
"""


class LoadingTheLibrary(unittest.TestCase):
    """A damaged, older or foreign library given as libsinkgrad_c is refused with a
    SinkgradError naming the path and why, before ctypes could crash on it or leave a raw
    AttributeError to the first call that lacks a function."""

    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="sinkgrad_capi_load_")
        self.addCleanup(shutil.rmtree, self.directory)
        with open(LIB.path, "rb") as file:
            self.image = file.read()

    def write(self, name, data):
        path = os.path.join(self.directory, name)
        with open(path, "wb") as file:
            file.write(data)
        return path

    def load(self, path, timeout=60):
        package = os.path.dirname(os.path.dirname(os.path.abspath(sinkgrad._capi.__file__)))
        # The copies find libsinkgrad beside the original, wherever its RUNPATH points.
        env = dict(os.environ, PYTHONPATH=package,
                   LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(LIB.path)))
        result = subprocess.run([sys.executable, "-c", LOAD, path], env=env, timeout=timeout,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(result.returncode, 0, f"{path}: {result.stdout}")
        return result.stdout.strip()

    def assert_refused(self, path, reason):
        """Loading path in a child raises SinkgradError naming the path and the reason."""
        output = self.load(path)
        self.assertTrue(output.startswith(f"SinkgradError: cannot load libsinkgrad_c from "
                                          f"{path}: "), output)
        self.assertIn(reason, output)

    def test_a_complete_copy_loads(self):
        self.assertEqual(self.load(self.write("libsinkgrad_c.so", self.image)), "loaded")

    def test_a_truncated_copy_is_refused(self):
        # An interrupted copy: its first bytes (dlopen maps segments past the end: SIGBUS), up
        # to the last segment, and all but the section headers at the end.
        for size in (40, 1000, len(self.image) // 2, len(self.image) - 64):
            path = self.write(f"cut_{size}.so", self.image[:size])
            with self.subTest(size=size):
                self.assert_refused(path, "cut short or damaged")

    def test_files_that_are_no_shared_library_are_refused(self):
        for name, data in (("empty.so", b""), ("object.o", b"\x7fELF\2\1\1" + bytes(100)),
                           ("text.so", b"INPUT(libsinkgrad_c.so.1)\n" * 4)):
            path = self.write(name, data)
            with self.subTest(name=name):
                self.assert_refused(path, "not a shared library")

    def test_a_fifo_is_refused_without_blocking(self):
        path = os.path.join(self.directory, "fifo.so")
        os.mkfifo(path)
        output = self.load(path, timeout=20)  # dlopen would wait for a writer forever
        self.assertIn(f"from {path}: ", output)
        self.assertIn("not a regular file", output)

    def test_an_older_library_names_the_missing_function(self):
        # sinkgrad_backward renamed in the copy's symbol names: a library from before it came.
        name = b"\0sinkgrad_backward\0"
        self.assertIn(name, self.image)
        path = self.write("older.so", self.image.replace(name, b"\0sinkgrad_backwarX\0"))
        self.assertEqual(self.load(path),
                         f"SinkgradError: {path} is an older libsinkgrad_c than this package (no "
                         "sinkgrad_backward); rebuild it or unset SINKGRAD_C_LIB")

    def test_a_foreign_library_is_not_called_an_older_one(self):
        libm = ctypes.util.find_library("m")
        if libm is None:
            self.skipTest("no libm found")
        output = self.load(libm)
        self.assertTrue(output.startswith(f"SinkgradError: {libm} is not a libsinkgrad_c "),
                        output)
        self.assertNotIn("older", output)

    def test_a_missing_file_is_a_sinkgrad_error(self):
        path = os.path.join(self.directory, "missing", "libsinkgrad_c.so")
        self.assertTrue(self.load(path).startswith(
            f"SinkgradError: cannot load libsinkgrad_c from {path}: "))


if __name__ == "__main__":
    LIB = SinkgradC(sys.argv.pop(1) if len(sys.argv) > 1 else None)
    unittest.main(verbosity=2)
