"""sinkgrad.torch on the cpu: per-matrix statuses (a NaN matrix does not spoil its
neighbours), each on_failure mode, plugins, and the errors a user gets for bad arguments.

    PYTHONPATH=build/python python3 tests/torch/failures_test.py [TEST_PLUGIN REFUSED_PLUGIN]
"""
import math
import sys
import unittest

import torch

from reference import backward_with_stats, import_layer, inputs, relative, unrolled_torch

sgt = import_layer()
PLUGIN = REFUSED_PLUGIN = None
BUILTINS = ("unrolled", "cg_plain", "cg_corrected", "direct")


def run(M, T, G, **kwargs):
    return backward_with_stats(sgt, M, T, G, **kwargs)


class Statuses(unittest.TestCase):
    def test_a_nan_matrix_fails_alone(self):
        M, G = inputs(8, 5, seed=11)
        M_bad = M.clone()
        M_bad[3, 1, 2] = math.nan
        keep = [b for b in range(8) if b != 3]
        for backward in BUILTINS:
            grad_ok, stats_ok = run(M, 20, G, backward=backward)
            grad, stats = run(M_bad, 20, G, backward=backward)
            self.assertEqual(stats.status[3].item(), 3, backward)  # invalid_input
            # (cg_plain may report not_converged for some: the plain system, docs/math.md)
            self.assertTrue(torch.equal(stats.status[keep], stats_ok.status[keep]), backward)
            self.assertTrue(torch.equal(stats.iterations[keep], stats_ok.iterations[keep]))
            self.assertTrue(torch.isnan(grad[3]).all(), backward)
            self.assertTrue(torch.equal(grad[keep], grad_ok[keep]), backward)
            self.assertEqual(stats.counts()["invalid_input"], 1)
            self.assertEqual(stats.failed().sum().item(),
                             stats_ok.failed()[keep].sum().item() + 1)

    def test_the_forward_gives_nan_for_that_matrix_only(self):
        M, _ = inputs(4, 3, seed=12)
        M[1, 0, 0] = math.inf
        R = sgt.sinkhorn(M, 5)
        self.assertTrue(torch.isnan(R[1]).all())
        self.assertTrue(torch.isfinite(R[[0, 2, 3]]).all())

    def test_finite_logits_of_any_magnitude_give_a_finite_r(self):
        # Past 1e10 (float32) / 1e20 (float64) exp(M + f + g) over- or underflowed: NaN R,
        # no status. Every convention's R is now finite with its last axis normalised.
        torch.manual_seed(14)
        for dtype, scales in ((torch.float32, (1e10, 1e30)), (torch.float64, (1e20, 1e300))):
            for forward in ("columns_first", "rows_first", "tilekernels", "megatron_main",
                            "magi2", "mhc_triton"):
                for scale in scales:
                    M = (torch.rand(64, 4, 4, dtype=dtype) * 2 - 1) * scale
                    R = sgt.sinkhorn(M, 10, forward=forward)
                    where = f"{dtype} {forward} {scale:g}"
                    self.assertTrue(torch.isfinite(R).all(), where)
                    self.assertTrue(((R >= 0) & (R <= 1)).all(), where)
                    last = -1 if forward in ("columns_first", "magi2") else -2
                    sums = R.sum(last)
                    self.assertTrue((sums <= 1 + 1e-5).all(), where)
                    if sgt.default_eps(forward) == 0:  # with eps a line sums to s / (s + eps)
                        self.assertTrue(((sums - 1).abs() <= 1e-5).all(), where)


class OnFailure(unittest.TestCase):
    def setUp(self):
        self.M, self.G = inputs(16, 6, seed=13)
        # One CG step cannot solve a 6 x 6 system: every matrix is not_converged.
        self.starved = {"max_iterations": 1}

    def test_keep_leaves_the_last_iterate(self):
        grad, stats = run(self.M, 5, self.G, backward="cg_corrected", options=self.starved,
                          on_failure="keep")
        self.assertTrue(torch.all(stats.status == 1))
        self.assertTrue(torch.isfinite(grad).all())
        self.assertGreater(relative(grad, unrolled_torch(self.M, 5, self.G)), 1e-3)

    def test_unrolled_recomputes_the_failed_matrices(self):
        M = self.M.clone()
        M[5, 2, 2] = math.nan
        exact = unrolled_torch(M, 5, self.G)
        grad, stats = run(M, 5, self.G, backward="cg_corrected", options=self.starved,
                          on_failure="unrolled")
        good = [b for b in range(16) if b != 5]
        self.assertTrue(torch.all(stats.status[good] == 1))  # the first solver's outcome
        self.assertEqual(stats.status[5].item(), 3)
        self.assertLess(relative(grad[good], exact[good]), 1e-10)
        self.assertTrue(torch.isnan(grad[5]).all())  # unrolled cannot do better with NaN

    def test_unrolled_leaves_converged_matrices_alone(self):
        grad_keep, _ = run(self.M, 5, self.G, backward="cg_corrected")
        grad, stats = run(self.M, 5, self.G, backward="cg_corrected", on_failure="unrolled")
        self.assertTrue(torch.all(stats.status == 0))
        self.assertTrue(torch.equal(grad, grad_keep))

    def test_raise_names_the_count_and_reason(self):
        M = self.M.clone()
        M[0, 0, 0] = math.nan
        with self.assertRaisesRegex(sgt.SolveFailure,
                                    r"'cg_corrected': 16 of 16 matrices failed "
                                    r"\(15 not_converged, 1 invalid_input\)"):
            run(M, 5, self.G, backward="cg_corrected", options=self.starved,
                on_failure="raise")
        grad, _ = run(self.M, 5, self.G, backward="cg_corrected", on_failure="raise")
        self.assertTrue(torch.isfinite(grad).all())

    def test_a_nan_forward_from_finite_logits_fails(self):
        # mhc_triton with eps 0: |M| + 0 has a zero row, so the forward divides 0 by 0 and R is
        # NaN from finite logits. Every backward reports the matrix as failed, its gradient NaN.
        M = torch.zeros(1, 3, 3, dtype=torch.float64)
        G = torch.arange(9.0, dtype=torch.float64).view(1, 3, 3)
        for backward in ("unrolled", "auto", "cg_corrected", "cg_plain", "direct"):
            grad, stats = run(M, 5, G, backward=backward, forward="mhc_triton", eps=0.0,
                              on_failure="keep")
            self.assertTrue(torch.isnan(grad).all(), backward)
            self.assertIn(stats.status[0].item(), (2, 3), backward)  # breakdown, invalid_input
            with self.assertRaises(sgt.SolveFailure, msg=backward):
                run(M, 5, G, backward=backward, forward="mhc_triton", eps=0.0,
                    on_failure="raise")


class Errors(unittest.TestCase):
    def setUp(self):
        self.M, _ = inputs(2, 3, seed=14)

    def check(self, error, pattern, *args, **kwargs):
        with self.assertRaisesRegex(error, pattern):
            sgt.sinkhorn(*args, **kwargs)

    def test_bad_solver_and_options(self):
        self.check(ValueError, r"^sinkgrad.torch.sinkhorn: unknown backward 'no_such'; known: "
                   r"auto, .*cg_corrected", self.M, 5, backward="no_such")
        self.check(ValueError, r"tolerence", self.M, 5, backward="cg_corrected",
                   options={"tolerence": 1e-6})
        self.check(ValueError, r"max_iterations", self.M, 5, backward="cg_corrected",
                   options={"max_iterations": -3})
        self.check(ValueError, r"system", self.M, 5, backward="cg_plain",
                   options={"system": "cholesky"})
        self.check(TypeError, r"options must be a dict", self.M, 5, options="tolerance=1")
        self.check(ValueError, r"cannot be passed", self.M, 5, backward="cg_corrected",
                   options={"tolerance": "1e-6,max_iterations=3"})
        self.check(ValueError, r"a key is a name without ',' or '='", self.M, 5,
                   backward="cg_corrected", options={"tolerance=1e-3 max_iterations": "2"})

    def test_bad_tensors_and_arguments(self):
        self.check(TypeError, r"dtype torch.int64 are not supported", torch.ones(2, 3, 3,
                   dtype=torch.int64), 5)
        self.check(TypeError, r"dtype torch.complex64", torch.ones(3, 3,
                   dtype=torch.complex64), 5)
        self.check(TypeError, r"must be a torch.Tensor", [[1.0]], 5)
        self.check(ValueError, r"shape \(\.\.\., n, n\) with n >= 1, got \(2, 3, 4\)",
                   torch.ones(2, 3, 4), 5)
        self.check(ValueError, r"shape \(\.\.\., n, n\)", torch.ones(3), 5)
        self.check(ValueError, r"iterations must be from 1 to 1000000, got 0", self.M, 0)
        self.check(TypeError, r"iterations must be an int, got float 2.5", self.M, 2.5)
        self.check(ValueError, r"on_failure='retry'", self.M, 5, on_failure="retry")
        self.check(TypeError, r"SolveStats", self.M, 5, stats={})

    def test_bad_forward_conventions(self):
        self.check(ValueError, r"forward='TE' is not a forward convention \(use columns_first, "
                   r"rows_first, tilekernels, megatron_main, magi2, mhc_triton, maxtext, "
                   r"megatron_dev\)", self.M, 5, forward="TE")
        self.check(ValueError, r"eps must be finite and >= 0, got -1e-06", self.M, 5,
                   forward="tilekernels", eps=-1e-6)
        self.check(TypeError, r"eps must be a number or None, got str", self.M, 5, eps="0")
        # Above float32's largest: refused as every other bad eps, in a float64 layer too, and
        # when the module is made, before any call.
        self.check(ValueError, r"eps must be finite and >= 0, got 1e\+39 \(at most float32's "
                   r"largest, 3.40282e\+38\)", self.M.double(), 5, forward="mhc_triton",
                   eps=1e39)
        with self.assertRaisesRegex(ValueError, r"eps must be finite and >= 0, got 1e\+39"):
            sgt.Sinkhorn(5, forward="mhc_triton", eps=1e39)
        self.check(ValueError, r"eps must be finite and >= 0, got 1000", self.M, 5, eps=10**400)
        self.assertEqual(sgt.sinkhorn(self.M, 5, forward="mhc_triton", eps=3.4e38).shape,
                         self.M.shape)


class StreamOrderedCAbi(unittest.TestCase):
    """The C ABI's stream-ordered functions refuse, with a message, what they cannot run."""

    def test_errors(self):
        from sinkgrad._capi import library
        lib = library()
        with self.assertRaisesRegex(sgt.SinkgradError,
                                    r"sinkgrad_forward_convention_async: logits is NULL"):
            lib.forward_async(4, 1, 4, 3, 0, 0, None)
        with self.assertRaisesRegex(sgt.SinkgradError,
                                    r"sinkgrad_solve_convention_async: unknown solver"):
            lib.solve_async("nope", "", 8, 1, 4, 3, 0, 0, 0, 0, 0, 0, None)
        with self.assertRaisesRegex(sgt.SinkgradError, r"dtype must be 4 .* or 8"):
            lib.solve_async("unrolled", "", 2, 1, 4, 3, 0, 0, 0, 0, 0, 0, None)
        with self.assertRaisesRegex(sgt.SinkgradError, r"device must be 0 \(cpu\) or 1"):
            lib.check_solver("unrolled", "", 7, 8)
        if not torch.cuda.is_available():  # host memory on a machine without a GPU
            M, R = torch.zeros(1, 4, 4), torch.zeros(1, 4, 4)
            with self.assertRaisesRegex(sgt.SinkgradError, r"no CUDA"):
                lib.forward_async(4, 1, 4, 3, M.data_ptr(), R.data_ptr(), None)


class Plugins(unittest.TestCase):
    def test_a_plugin_solver_with_options(self):
        if PLUGIN is None:
            self.skipTest("no plugin path given")
        sgt.load_plugin(PLUGIN)
        sgt.load_plugin(PLUGIN)  # again: harmless
        M, G = inputs(3, 4, seed=15)
        grad, stats = run(M, 5, G, backward="torch_test_scaled_copy", options={"scale": 2.5})
        self.assertTrue(torch.equal(grad, 2.5 * G))
        self.assertTrue(torch.all(stats.iterations == 7))
        with self.assertRaisesRegex(ValueError, r"scale"):
            sgt.sinkhorn(M, 5, backward="torch_test_scaled_copy", options={"scale": -1})

    def check_the_output_contract(self, device):
        # NaN with status ok from a plugin: the library reports breakdown for that matrix
        # (BackwardSolver::solve's output contract; on cuda checked on the GPU in the layer's
        # stream), the layer's default replaces it by the exact gradient, and on_failure="raise"
        # names it.
        sgt.load_plugin(PLUGIN)
        M, G = (t.to(device) for t in inputs(4, 4, seed=16))
        options = {"scale": 2.0, "nan_at": 2}
        grad, stats = run(M, 5, G, backward="torch_test_scaled_copy", options=options,
                          on_failure="keep")
        self.assertEqual(stats.status.tolist(), [0, 0, 2, 0])  # breakdown
        self.assertTrue(torch.isnan(grad[2]).all())
        self.assertTrue(torch.equal(grad[[0, 1, 3]], 2.0 * G[[0, 1, 3]]))
        grad, stats = run(M, 5, G, backward="torch_test_scaled_copy", options=options)
        self.assertTrue(torch.isfinite(grad).all())
        exact, _ = run(M, 5, G, backward="unrolled")
        self.assertTrue(torch.equal(grad[2], exact[2]))
        with self.assertRaisesRegex(sgt.SolveFailure, r"breakdown"):
            run(M, 5, G, backward="torch_test_scaled_copy", options=options, on_failure="raise")

    def test_the_output_contract_catches_a_plugins_nan(self):
        if PLUGIN is None:
            self.skipTest("no plugin path given")
        self.check_the_output_contract("cpu")

    def test_the_output_contract_catches_a_plugins_nan_on_cuda(self):
        if PLUGIN is None or not torch.cuda.is_available():
            self.skipTest("no plugin path given" if PLUGIN is None else "no CUDA device")
        self.check_the_output_contract("cuda")

    def test_refused_plugins_raise_the_loaders_reason(self):
        with self.assertRaisesRegex(sgt.SinkgradError, r"/no/such/plugin.so"):
            sgt.load_plugin("/no/such/plugin.so")
        if REFUSED_PLUGIN is not None:
            with self.assertRaisesRegex(sgt.SinkgradError, r"plugin ABI version"):
                sgt.load_plugin(REFUSED_PLUGIN)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and not sys.argv[1].startswith("-"):
        PLUGIN, REFUSED_PLUGIN = sys.argv[1], sys.argv[2]
        del sys.argv[1:3]
    unittest.main()
