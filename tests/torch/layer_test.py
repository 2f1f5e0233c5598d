"""sinkgrad.torch on the cpu: the forward against the library's and a plain-torch forward,
every built-in backward in float64 against torch.autograd of the plain forward or the
implicit formulas, gradcheck, half-precision inputs, leading dims and strides.

    PYTHONPATH=build/python python3 tests/torch/layer_test.py
"""
import unittest

import torch

from reference import (convention_torch, corrected_torch, import_layer, inputs, plain_torch,
                       relative, sinkhorn_torch, unrolled_torch)

sgt = import_layer()
from sinkgrad import _ops  # noqa: E402
from sinkgrad._capi import CPU, library  # noqa: E402


def layer_gradient(M, T, G, **kwargs):
    M = M.detach().clone().requires_grad_(True)
    stats = sgt.SolveStats()
    R = sgt.sinkhorn(M, T, stats=stats, **kwargs)
    R.backward(G)
    return R.detach(), M.grad, stats


class Forward(unittest.TestCase):
    def test_equals_the_library_forward_bit_for_bit(self):
        for dtype in (torch.float32, torch.float64):
            M, _ = inputs(16, 5, seed=1, dtype=dtype)
            expected = torch.empty_like(M)
            library().forward(CPU, M.element_size(), 16, 5, 7, M.data_ptr(),
                              expected.data_ptr())
            self.assertTrue(torch.equal(sgt.sinkhorn(M, 7), expected))

    def test_matches_the_plain_torch_forward(self):
        M, _ = inputs(32, 6, seed=2)
        self.assertLess(relative(sgt.sinkhorn(M, 9), sinkhorn_torch(M, 9)), 1e-13)


class Float64Gradients(unittest.TestCase):
    T = 5  # far from converged: the implicit gradients differ from the unrolled one here

    def setUp(self):
        self.M, self.G = inputs(24, 6, seed=3)

    def test_unrolled_matches_torch_autograd(self):
        R, grad, stats = layer_gradient(self.M, self.T, self.G, backward="unrolled")
        self.assertLess(relative(grad, unrolled_torch(self.M, self.T, self.G)), 1e-10)
        self.assertTrue(torch.all(stats.status == 0))

    def test_corrected_solvers_match_the_corrected_formula(self):
        for backward, options in (("cg_corrected", None), ("direct", None),
                                  ("direct", {"system": "corrected"})):
            R, grad, stats = layer_gradient(self.M, self.T, self.G, backward=backward,
                                            options=options)
            self.assertLess(relative(grad, corrected_torch(R, self.G)), 1e-9, backward)
            self.assertTrue(torch.all(stats.status == 0), backward)

    def test_plain_system_matches_the_plain_formula(self):
        # T = 2: I - R^T R has condition numbers up to 7e4 here (3e9 at T = 5: the plain
        # system's near-null eigenvalue, docs/math.md), so two solvers agree to about 1e-11.
        # project=false: the formula as written, not projected onto zero column sums.
        R, grad, _ = layer_gradient(self.M, 2, self.G, backward="direct",
                                    options={"system": "plain", "project": "false"})
        self.assertLess(relative(grad, plain_torch(R, self.G)), 1e-10)

    def test_every_solver_matches_unrolled_once_converged(self):
        M, G = inputs(24, 6, seed=4, scale=1.0)  # converges within T = 200
        exact = unrolled_torch(M, 200, G)
        for backward in ("unrolled", "cg_plain", "cg_corrected", "direct"):
            _, grad, stats = layer_gradient(M, 200, G, backward=backward)
            self.assertLess(relative(grad, exact), 1e-8, backward)
            self.assertTrue(torch.all(stats.status == 0), backward)
        _, grad, _ = layer_gradient(M, 200, G, backward="cg_plain", options={"system": "block"})
        self.assertLess(relative(grad, exact), 1e-8)

    def test_cg_reports_its_iterations(self):
        _, _, stats = layer_gradient(self.M, self.T, self.G, backward="cg_corrected")
        self.assertEqual(stats.iterations.dtype, torch.int32)
        self.assertTrue(torch.all((stats.iterations >= 1) & (stats.iterations <= 12)))

    def test_gradcheck_unrolled(self):
        M, _ = inputs(2, 3, seed=5)
        M.requires_grad_(True)
        self.assertTrue(torch.autograd.gradcheck(lambda x: sgt.sinkhorn(x, 4), (M,)))


class ForwardConventions(unittest.TestCase):
    """forward= and eps= against the formulas of docs/math.md ("Forward conventions") written out
    in torch (reference.py): R, the unrolled gradient (its autograd), the implicit formulas on R,
    and every solver against unrolled once converged."""

    CASES = (("columns_first", 0.0), ("columns_first", 1e-3), ("rows_first", 0.0),
             ("rows_first", 1e-3), ("tilekernels", 1e-6), ("tilekernels", 0.0),
             ("tilekernels", 0.25))

    def test_forward_and_unrolled_match_the_formulas(self):
        for n in (1, 2, 3, 4, 7, 8):
            for T in (1, 3, 20):
                M, G = inputs(6, n, seed=60 + n * T)
                for forward, eps in self.CASES:
                    case = (forward, eps, n, T)
                    R, grad, stats = layer_gradient(M, T, G, forward=forward, eps=eps)
                    self.assertLess(relative(R, convention_torch(M, T, forward, eps)), 1e-13,
                                    case)
                    exact = unrolled_torch(M, T, G, forward, eps)
                    if n == 1 and (eps == 0 or forward == "tilekernels"):
                        # R does not depend on M (R = 1, or softmax of one entry): gradient 0
                        self.assertTrue(torch.all(exact.abs() < 1e-15), case)
                        self.assertTrue(torch.all(grad.abs() < 1e-15), case)
                    elif n == 1:
                        # With eps, dL/dM (of order eps e^-M) is what is left of terms of order
                        # G that cancel: the rounding of those bounds it, as in the library's tests.
                        floor = 1e-10 * exact.abs().max().item() + 1e-14 * G.abs().max().item()
                        self.assertLess((grad - exact).abs().max().item(), floor, case)
                    else:
                        self.assertLess(relative(grad, exact), 1e-10, case)
                    self.assertTrue(torch.all(stats.status == 0), case)

    def test_default_eps_is_the_conventions_own(self):
        M, _ = inputs(4, 4, seed=70)
        self.assertTrue(torch.equal(sgt.sinkhorn(M, 5, forward="tilekernels"),
                                    sgt.sinkhorn(M, 5, forward="tilekernels", eps=1e-6)))
        self.assertTrue(torch.equal(sgt.sinkhorn(M, 5, forward="rows_first"),
                                    sgt.sinkhorn(M, 5, forward="rows_first", eps=0.0)))
        self.assertFalse(torch.equal(sgt.sinkhorn(M, 5, forward="rows_first"),
                                     sgt.sinkhorn(M, 5)))

    def test_implicit_solvers_use_the_r_of_the_chosen_forward(self):
        # rows_first ends on columns: its plain system is the transposed one (columns exact).
        M, G = inputs(16, 5, seed=71)
        R, grad, _ = layer_gradient(M, 5, G, backward="cg_corrected", forward="rows_first")
        self.assertLess(relative(grad, corrected_torch(R, G)), 1e-9)
        R, grad, _ = layer_gradient(M, 2, G, backward="direct",
                                    options={"system": "plain", "project": "false"},
                                    forward="rows_first")
        transposed = plain_torch(R.mT, G.mT).mT
        self.assertLess(relative(grad, transposed), 1e-10)

    def test_every_solver_matches_unrolled_once_converged(self):
        M, G = inputs(12, 5, seed=72, scale=1.0)
        for forward in ("rows_first", "tilekernels"):
            exact = unrolled_torch(M, 200, G, forward, 0.0)
            for backward in ("unrolled", "cg_plain", "cg_corrected", "direct"):
                _, grad, stats = layer_gradient(M, 200, G, backward=backward, forward=forward,
                                                eps=0.0)
                self.assertLess(relative(grad, exact), 1e-8, (forward, backward))
                self.assertTrue(torch.all(stats.status == 0), (forward, backward))

    def test_on_failure_unrolled_recomputes_with_the_same_forward(self):
        M, G = inputs(8, 4, seed=73)
        starved = {"max_iterations": 1, "tolerance": 1e-14}
        _, grad, stats = layer_gradient(M, 3, G, backward="cg_corrected", options=starved,
                                        forward="tilekernels", eps=1e-2, on_failure="unrolled")
        self.assertTrue(torch.all(stats.status == 1))
        self.assertLess(relative(grad, unrolled_torch(M, 3, G, "tilekernels", 1e-2)), 1e-10)

    def test_half_inputs(self):
        M, G = inputs(8, 4, seed=74, dtype=torch.float32)
        R = sgt.sinkhorn(M.to(torch.bfloat16), 10, forward="tilekernels")
        self.assertEqual(R.dtype, torch.bfloat16)
        expected = convention_torch(M.to(torch.bfloat16).double(), 10, "tilekernels", 1e-6)
        self.assertLess(relative(R.double(), expected), 1e-2)

    def test_bad_values_are_refused(self):
        M, _ = inputs(2, 3, seed=75)
        with self.assertRaisesRegex(ValueError, "columns_first, rows_first, tilekernels"):
            sgt.sinkhorn(M, 3, forward="rows-first")
        for eps in (-1e-9, float("nan"), float("inf")):
            with self.assertRaisesRegex(ValueError, "eps must be finite and >= 0"):
                sgt.sinkhorn(M, 3, forward="rows_first", eps=eps)
        for eps in ("1e-6", True):
            with self.assertRaisesRegex(TypeError, "eps must be a number"):
                sgt.sinkhorn(M, 3, eps=eps)


class DtypesShapesStrides(unittest.TestCase):
    def test_half_types_give_their_dtype_and_float32_gradients(self):
        M, G = inputs(32, 4, seed=6, dtype=torch.float32)
        for backward in ("unrolled", "cg_corrected"):
            R32, grad32, _ = layer_gradient(M, 20, G, backward=backward)
            for dtype in (torch.bfloat16, torch.float16):
                Mh = M.to(dtype)
                R, grad, stats = layer_gradient(Mh, 20, G.to(dtype), backward=backward)
                self.assertEqual((R.dtype, grad.dtype), (dtype, dtype))
                # Against float32 of the rounded inputs: only R's and dM's rounding remains.
                R_ref, grad_ref, _ = layer_gradient(Mh.float(), 20, G.to(dtype).float(),
                                                    backward=backward)
                tolerance = 2e-2 if dtype == torch.bfloat16 else 3e-3
                self.assertLess(relative(R.float(), R_ref), tolerance)
                self.assertLess(relative(grad.float(), grad_ref), tolerance, (backward, dtype))
                self.assertLess(relative(grad.float(), grad32), 0.1, (backward, dtype))
                self.assertTrue(torch.all(stats.status == 0))

    def test_leading_dims(self):
        M, G = inputs(12, 5, seed=7)
        R, grad, stats = layer_gradient(M.view(3, 2, 2, 5, 5), 6, G.view(3, 2, 2, 5, 5),
                                        backward="cg_corrected")
        R_flat, grad_flat, _ = layer_gradient(M, 6, G, backward="cg_corrected")
        self.assertEqual(R.shape, (3, 2, 2, 5, 5))
        self.assertTrue(torch.equal(R.reshape(12, 5, 5), R_flat))
        self.assertTrue(torch.equal(grad.reshape(12, 5, 5), grad_flat))
        self.assertEqual(stats.status.shape, (3, 2, 2))
        self.assertEqual(stats.iterations.shape, (3, 2, 2))

    def test_single_matrix_and_empty_batch(self):
        M, G = inputs(1, 4, seed=8)
        _, grad, stats = layer_gradient(M[0], 5, G[0])
        self.assertEqual(stats.status.shape, ())
        self.assertLess(relative(grad, unrolled_torch(M[0], 5, G[0])), 1e-10)
        _, grad, stats = layer_gradient(torch.zeros(0, 4, 4, dtype=torch.float64), 5,
                                        torch.zeros(0, 4, 4, dtype=torch.float64))
        self.assertEqual((grad.shape, stats.status.shape), ((0, 4, 4), (0,)))

    def test_non_contiguous_inputs(self):
        M, G = inputs(16, 5, seed=9)
        wide = torch.zeros(16, 5, 10, dtype=torch.float64)
        wide[..., ::2] = M.transpose(-1, -2)
        strided = wide[..., ::2].transpose(-1, -2)[::2]  # same values as M[::2], odd strides
        self.assertFalse(strided.is_contiguous())
        self.assertTrue(torch.equal(strided, M[::2]))
        strided.requires_grad_(True)
        R = sgt.sinkhorn(strided, 6, backward="cg_corrected")
        R.backward(G[::2].transpose(-1, -2).contiguous().transpose(-1, -2))
        R_ref, grad_ref, _ = layer_gradient(M[::2].contiguous(), 6, G[::2].contiguous(),
                                            backward="cg_corrected")
        self.assertTrue(torch.equal(R.detach(), R_ref))
        self.assertTrue(torch.equal(strided.grad, grad_ref))

    def test_logits_without_grad_and_no_backward(self):
        M, _ = inputs(4, 3, seed=10)
        stats = sgt.SolveStats()
        R = sgt.sinkhorn(M, 3, stats=stats)
        self.assertFalse(R.requires_grad)
        self.assertIsNone(stats.status)
        self.assertIn("no backward", repr(stats))


@unittest.skipUnless(_ops.CUSTOM_OPS, "torch < 2.4: no custom ops, no torch.compile path")
class Compile(unittest.TestCase):
    def test_opcheck(self):
        M, G = inputs(8, 4, seed=40)
        for forward, eps in (("columns_first", 0.0), ("tilekernels", 1e-3)):
            for backward in ("unrolled", "cg_corrected"):
                arguments = (5, backward, "", "keep", forward, eps)
                torch.library.opcheck(torch.ops.sinkgrad.sinkhorn, (M,) + arguments)
                R = torch.ops.sinkgrad.sinkhorn(M, *arguments)
                torch.library.opcheck(torch.ops.sinkgrad.sinkhorn_backward,
                                      (M, R, G) + arguments)

    def test_fullgraph_gives_the_eager_gradient(self):
        # The whole function is one graph (fullgraph=True refuses any break) and its gradient
        # is the eager layer's: the same library calls on the same tensors.
        M, G = inputs(16, 4, seed=41)
        for backward, forward in (("unrolled", "columns_first"), ("cg_corrected", "rows_first"),
                                  ("direct", "tilekernels")):
            def loss(x, g):
                return (sgt.sinkhorn(x, 6, backward=backward, forward=forward) * g).sum()

            x = M.clone().requires_grad_(True)
            loss(x, G).backward()
            expected = x.grad
            torch._dynamo.reset()
            x = M.clone().requires_grad_(True)
            torch.compile(loss, fullgraph=True, backend="aot_eager")(x, G).backward()
            self.assertTrue(torch.equal(x.grad, expected), (backward, forward))

    def test_stats_are_refused_under_compile(self):
        M, _ = inputs(2, 3, seed=42)
        torch._dynamo.reset()
        compiled = torch.compile(lambda x: sgt.sinkhorn(x, 3, stats=sgt.SolveStats()),
                                 fullgraph=True, backend="aot_eager")
        with self.assertRaisesRegex(Exception, "stats is not available under torch.compile"):
            compiled(M)


if __name__ == "__main__":
    unittest.main()
