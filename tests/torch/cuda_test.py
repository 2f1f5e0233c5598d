"""sinkgrad.torch on CUDA: the same results as on the cpu (the CG solvers bit for bit), half
types, strides, statuses and on_failure on the GPU, a side stream, no host synchronisation, a
CUDA graph of forward + backward, every forward convention, and the eager gradient under
torch.compile (torch >= 2.4). Exits 77
(skipped) without a CUDA device.

    PYTHONPATH=build/python python3 tests/torch/cuda_test.py
"""
import math
import sys
import unittest

import torch

from reference import import_layer, inputs, relative

sgt = import_layer()
from sinkgrad import _kernels, _ops  # noqa: E402

BITWISE = ("cg_plain", "cg_corrected")  # one summation order and FMA on both devices


def run(M, T, G, device, **kwargs):
    """(R, dL/dM, status) on device, returned on the cpu."""
    M = M.detach().to(device).requires_grad_(True)
    stats = sgt.SolveStats()
    R = sgt.sinkhorn(M, T, stats=stats, **kwargs)
    R.backward(G.to(device))
    return R.detach().cpu(), M.grad.cpu(), stats.status.cpu()


class SameAsCpu(unittest.TestCase):
    def test_every_solver_in_both_precisions(self):
        # cg_plain is compared in the next test, from the same R: its plain system is so
        # ill-conditioned near convergence (docs/math.md) that the forwards' rounding differences
        # move its iterates.
        for dtype in (torch.float32, torch.float64):
            for n in (4, 8, 16):
                M, G = inputs(300, n, seed=20 + n, dtype=dtype)
                for backward in ("unrolled", "cg_corrected", "direct"):
                    R_cpu, grad_cpu, status_cpu = run(M, 20, G, "cpu", backward=backward)
                    R, grad, status = run(M, 20, G, "cuda", backward=backward)
                    what = (backward, dtype, n)
                    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
                    self.assertLess(relative(R, R_cpu), tolerance, what)
                    self.assertTrue(torch.equal(status, status_cpu), what)
                    self.assertLess(relative(grad, grad_cpu), 100 * tolerance, what)

    def test_cg_bitwise_from_the_same_forward_output(self):
        M, G = inputs(500, 8, seed=30)
        R = sgt.sinkhorn(M, 20)
        for backward in BITWISE:
            grads = [_kernels.solve(M.to(device), R.to(device), G.to(device), 20, backward,
                                    "")[0].cpu() for device in ("cpu", "cuda")]
            self.assertTrue(torch.equal(grads[0], grads[1]), backward)

    def test_half_types_leading_dims_and_strides(self):
        M, G = inputs(64, 4, seed=31, dtype=torch.float32)
        for dtype in (torch.bfloat16, torch.float16):
            shaped = M.to(dtype).view(4, 16, 4, 4).transpose(-1, -2)  # non-contiguous
            R, grad, status = run(shaped, 20, G.view(4, 16, 4, 4).to(dtype), "cuda",
                                  backward="cg_corrected")
            R_cpu, grad_cpu, _ = run(shaped, 20, G.view(4, 16, 4, 4).to(dtype), "cpu",
                                     backward="cg_corrected")
            self.assertEqual((R.dtype, grad.dtype, status.shape), (dtype, dtype, (4, 16)))
            self.assertLess(relative(grad.float(), grad_cpu.float()), 1e-2)


class ConventionsSameAsCpu(unittest.TestCase):
    def test_every_solver_and_convention(self):
        for dtype in (torch.float32, torch.float64):
            for n in (3, 4, 8, 16):
                M, G = inputs(200, n, seed=40 + n, dtype=dtype)
                for forward, eps in (("rows_first", 0.0), ("rows_first", 1e-4),
                                     ("tilekernels", 1e-6), ("columns_first", 1e-4)):
                    for backward in ("unrolled", "cg_corrected", "direct"):
                        kwargs = dict(backward=backward, forward=forward, eps=eps)
                        R_cpu, grad_cpu, status_cpu = run(M, 20, G, "cpu", **kwargs)
                        R, grad, status = run(M, 20, G, "cuda", **kwargs)
                        what = (forward, eps, backward, dtype, n)
                        tolerance = 1e-5 if dtype == torch.float32 else 1e-12
                        self.assertLess(relative(R, R_cpu), tolerance, what)
                        self.assertTrue(torch.equal(status, status_cpu), what)
                        self.assertLess(relative(grad, grad_cpu), 100 * tolerance, what)

    def test_cg_plain_bitwise_from_the_same_forward_output(self):
        # rows_first and tilekernels end on columns: the plain system is eliminated on that side.
        # tilekernels with eps > 0 carries the gradient from log B to M, recomputing the softmax
        # with each device's exp: equal to rounding there, bitwise where nothing is carried.
        M, G = inputs(300, 8, seed=48)
        for forward, eps, bitwise in (("rows_first", 0.0, True), ("tilekernels", 0.0, True),
                                      ("tilekernels", 1e-6, False)):
            R = sgt.sinkhorn(M, 20, forward=forward, eps=eps)
            grads = [_kernels.solve(M.to(device), R.to(device), G.to(device), 20, "cg_plain", "",
                                    (forward, eps))[0].cpu() for device in ("cpu", "cuda")]
            if bitwise:
                self.assertTrue(torch.equal(grads[0], grads[1]), forward)
            else:
                self.assertLess(relative(grads[1], grads[0]), 1e-5, (forward, eps))


class FailuresOnTheGpu(unittest.TestCase):
    def test_nan_matrix_and_on_failure(self):
        M, G = inputs(32, 6, seed=32)
        M[7, 0, 0] = math.nan
        starved = {"max_iterations": 1}
        for mode in ("keep", "unrolled"):
            _, grad_cpu, status_cpu = run(M, 5, G, "cpu", backward="cg_corrected",
                                          options=starved, on_failure=mode)
            _, grad, status = run(M, 5, G, "cuda", backward="cg_corrected", options=starved,
                                  on_failure=mode)
            self.assertTrue(torch.equal(status, status_cpu), mode)
            self.assertEqual(status[7].item(), 3)
            self.assertTrue(torch.isnan(grad[7]).all())
            good = [b for b in range(32) if b != 7]
            self.assertLess(relative(grad[good], grad_cpu[good]), 1e-11, mode)
        with self.assertRaisesRegex(sgt.SolveFailure, r"32 of 32 matrices failed"):
            run(M, 5, G, "cuda", backward="cg_corrected", options=starved, on_failure="raise")


class Streams(unittest.TestCase):
    def test_side_stream(self):
        M, G = inputs(4096, 8, seed=33, dtype=torch.float32)
        _, expected, _ = run(M, 20, G, "cuda", backward="cg_corrected")
        side = torch.cuda.Stream()
        M_dev, G_dev = M.cuda().requires_grad_(True), G.cuda()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            sgt.sinkhorn(M_dev, 20, backward="cg_corrected").backward(G_dev)
        torch.cuda.current_stream().wait_stream(side)
        self.assertTrue(torch.equal(M_dev.grad.cpu(), expected))

    def test_no_host_synchronisation(self):
        M, G = inputs(1024, 8, seed=34, dtype=torch.float32)
        M, G = M.cuda().requires_grad_(True), G.cuda()
        stats = sgt.SolveStats()
        sgt.sinkhorn(M, 20, backward="cg_corrected", stats=stats).backward(G)  # warm-up
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            for mode in ("keep", "unrolled"):
                R = sgt.sinkhorn(M, 20, backward="cg_corrected", stats=stats, on_failure=mode)
                R.backward(G)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        self.assertEqual(stats.status.device.type, "cuda")

    def test_cuda_graph_of_forward_and_backward(self):
        for backward, forward in (("unrolled", "columns_first"), ("cg_corrected", "columns_first"),
                                  ("cg_plain", "rows_first"), ("direct", "tilekernels")):
            M, G = inputs(2048, 8, seed=35, dtype=torch.float32)
            static_M, static_G = M.cuda().requires_grad_(True), G.cuda()
            stats = sgt.SolveStats()

            def step():
                R = sgt.sinkhorn(static_M, 20, backward=backward, stats=stats,
                                 on_failure="unrolled", forward=forward)
                return R, torch.autograd.grad((R * static_G).sum(), static_M)[0]

            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                step()  # warm-up outside the capture (kernel attributes, allocator)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_R, static_grad = step()
            for seed in (36, 37):
                M2, G2 = inputs(2048, 8, seed=seed, dtype=torch.float32)
                static_M.data.copy_(M2.cuda())
                static_G.copy_(G2.cuda())
                graph.replay()
                R, grad, status = run(M2, 20, G2, "cuda", backward=backward, forward=forward,
                                      on_failure="unrolled")
                self.assertTrue(torch.equal(static_R.cpu(), R), backward)
                self.assertTrue(torch.equal(static_grad.cpu(), grad), backward)
                self.assertTrue(torch.equal(stats.status.cpu(), status), backward)


@unittest.skipUnless(_ops.CUSTOM_OPS, "torch < 2.4: no custom ops, no torch.compile path")
class Compile(unittest.TestCase):
    def test_opcheck(self):
        M, G = inputs(16, 4, seed=38)
        M, G = M.cuda(), G.cuda()
        arguments = (5, "cg_corrected", "", "keep", "rows_first", 0.0)
        torch.library.opcheck(torch.ops.sinkgrad.sinkhorn, (M,) + arguments)
        R = torch.ops.sinkgrad.sinkhorn(M, *arguments)
        torch.library.opcheck(torch.ops.sinkgrad.sinkhorn_backward, (M, R, G) + arguments)

    def test_fullgraph_gives_the_eager_gradient(self):
        # One graph (fullgraph=True) under aot_eager and inductor, with bfloat16 casts and
        # leading dims in it: the eager layer's R and gradient.
        M, G = inputs(1024, 4, seed=39, dtype=torch.float32)
        M, G = M.view(4, 256, 4, 4).cuda(), G.view(4, 256, 4, 4).cuda()
        for dtype in (torch.float32, torch.bfloat16):
            for backward in ("unrolled", "cg_corrected"):
                def loss(x, g):
                    R = sgt.sinkhorn(x, 20, backward=backward)
                    return (R.float() * g).sum(), R

                x = M.to(dtype).requires_grad_(True)
                _, R_eager = loss(x, G)
                (grad_eager,) = torch.autograd.grad(loss(x, G)[0], x)
                for backend in ("aot_eager", "inductor"):
                    torch._dynamo.reset()
                    compiled = torch.compile(loss, fullgraph=True, backend=backend)
                    value, R = compiled(x, G)
                    (grad,) = torch.autograd.grad(value, x)
                    what = (dtype, backward, backend)
                    self.assertTrue(torch.equal(R, R_eager), what)  # the same library call
                    # inductor may fuse away the bfloat16 rounding of R before the loss
                    # (it computes the loss from R in float32): gradients differ by that much.
                    tolerance = 1e-6 if dtype == torch.float32 else 2e-2
                    self.assertLess(relative(grad.float().cpu(), grad_eager.float().cpu()),
                                    tolerance, what)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        sys.exit(77)
    unittest.main()
