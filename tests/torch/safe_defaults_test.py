"""sinkgrad.torch's defaults on the inputs a real model produces: from finite logits the layer
never gives a NaN gradient, whatever backward is chosen, on mHC's streams that start as copies
(the true gradient is zero), on saturated logits (exp underflows) and on near-permutations;
backward="auto" gives the exact gradient where the implicit one is not trusted.

    PYTHONPATH=build/python python3 tests/torch/safe_defaults_test.py
"""
import unittest

import torch

from reference import backward_with_stats, import_layer, unrolled_torch

sgt = import_layer()
IMPLICIT = ("auto", "cg_plain", "cg_corrected", "direct")


def grad_of(M, T, G, **kwargs):
    return backward_with_stats(sgt, M, T, G, **kwargs)


def copied_streams(batch, n, dtype, generator):
    """dL/dR with equal columns (G_ij = g_i), as mHC's copied streams give it."""
    g = torch.randn(batch, n, 1, dtype=dtype, generator=generator)
    return g.expand(batch, n, n).contiguous()


class SafeDefaults(unittest.TestCase):
    def check_finite(self, M, T, G, what):
        for backward in IMPLICIT:
            grad, stats = grad_of(M, T, G, backward=backward)
            self.assertTrue(torch.isfinite(grad).all(), f"{what}: {backward}: {stats}")

    def test_copied_streams_give_a_zero_gradient_with_every_backward(self):
        generator = torch.Generator().manual_seed(1)
        for dtype, allowed in ((torch.float32, 1e-5), (torch.float64, 1e-13)):
            for n in (4, 8):
                for T in (1, 3, 20):
                    M = torch.randn(512, n, n, dtype=dtype, generator=generator)
                    G = copied_streams(512, n, dtype, generator)
                    for backward in IMPLICIT:
                        grad, stats = grad_of(M, T, G, backward=backward, on_failure="keep")
                        where = f"{dtype} n={n} T={T} {backward}: {stats}"
                        self.assertEqual(int(stats.failed().sum()), 0, where)
                        # The true gradient is zero; scale: the largest |G|.
                        self.assertLess(float(grad.abs().max()), allowed * float(G.abs().max()),
                                        where)

    def test_saturated_logits(self):
        generator = torch.Generator().manual_seed(2)
        for dtype, scale in ((torch.float32, 80.0), (torch.float64, 700.0)):
            M = (torch.rand(256, 6, 6, dtype=dtype, generator=generator) * 2 - 1) * scale
            G = torch.randn(256, 6, 6, dtype=dtype, generator=generator)
            for T in (1, 5, 20):
                self.check_finite(M, T, G, f"saturated {dtype} T={T}")

    def test_near_permutations(self):
        generator = torch.Generator().manual_seed(3)
        for dtype in (torch.float32, torch.float64):
            batch, n = 256, 5
            perm = torch.stack([torch.randperm(n, generator=generator) for _ in range(batch)])
            M = torch.nn.functional.one_hot(perm, n).to(dtype) * 30.0
            M = M + 0.01 * torch.randn(batch, n, n, dtype=dtype, generator=generator)
            G = torch.randn(batch, n, n, dtype=dtype, generator=generator)
            for T in (1, 20):
                self.check_finite(M, T, G, f"near-permutation {dtype} T={T}")

    def test_auto_is_exact_where_the_forward_is_far_from_converged(self):
        generator = torch.Generator().manual_seed(4)
        M = torch.randn(64, 5, 5, dtype=torch.float64, generator=generator) * 2
        G = torch.randn(64, 5, 5, dtype=torch.float64, generator=generator)
        grad, stats = grad_of(M, 1, G, backward="auto")
        exact = unrolled_torch(M, 1, G)
        fallback = stats.status == sgt.STATUS_NAMES.index("fallback")
        self.assertGreater(int(fallback.sum()), 0)  # T = 1 leaves the columns far from one
        self.assertTrue(torch.all((stats.status == 0) | fallback))
        self.assertLess(float((grad[fallback] - exact[fallback]).abs().max()), 1e-12)
        self.assertEqual(int(stats.failed().sum()), 0)

    def test_default_on_failure_replaces_a_starved_solve(self):
        generator = torch.Generator().manual_seed(5)
        M = torch.randn(32, 6, 6, dtype=torch.float64, generator=generator)
        G = torch.randn(32, 6, 6, dtype=torch.float64, generator=generator)
        grad, stats = grad_of(M, 5, G, backward="cg_corrected", options={"max_iterations": 1})
        self.assertTrue(torch.all(stats.status == 1))  # not_converged, the solver's own word
        self.assertLess(float((grad - unrolled_torch(M, 5, G)).abs().max()), 1e-12)


class Diagnostics(unittest.TestCase):
    def test_stats_carry_the_diagnostics_of_the_forwards_R(self):
        """Checked against the same quantities computed here in torch (float64 sums)."""
        generator = torch.Generator().manual_seed(6)
        for dtype in (torch.float32, torch.float64):
            # saturated logits: some entries of R are exactly 0
            M = (torch.rand(64, 16, 16, dtype=dtype, generator=generator) * 2 - 1) * 80
            G = torch.randn(64, 16, 16, dtype=dtype, generator=generator)
            for backward, options in (("cg_corrected", {"floor": 0}), ("unrolled", None)):
                logits = M.detach().clone().requires_grad_(True)
                stats = sgt.SolveStats()
                R = sgt.sinkhorn(logits, 3, backward=backward, options=options, stats=stats)
                R.backward(G)
                R = R.detach().double()
                rows = (R.sum(-1) - 1).abs().amax(-1)
                cols = (R.sum(-2) - 1).abs().amax(-1)
                self.assertTrue(torch.allclose(stats.row_violation.double(), rows, rtol=0,
                                               atol=1e-6 if dtype == torch.float32 else 1e-14))
                self.assertTrue(torch.allclose(stats.column_violation.double(), cols, rtol=0,
                                               atol=1e-6 if dtype == torch.float32 else 1e-14))
                zeros = (R == 0).sum((-2, -1)).to(torch.int32)
                self.assertTrue(torch.equal(stats.zero_entries, zeros))
                if dtype == torch.float32:  # exp(-160) underflows there, not in float64
                    self.assertGreater(int((zeros > 0).sum()), 0)
                residual = stats.relative_residual
                if backward == "unrolled":
                    self.assertTrue(torch.isnan(residual).all())
                else:
                    ok = stats.status == 0
                    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
                    self.assertTrue(torch.all(residual[ok] <= tolerance), residual[ok].max())


if __name__ == "__main__":
    unittest.main()
