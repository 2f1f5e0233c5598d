"""sinkgrad.torch as a PyTorch citizen on the cpu: sgt.Sinkhorn as a torch.nn.Module (its
forward and backward are sgt.sinkhorn's, its settings in its repr, inside nn.Sequential), the
profiler's names for the forward and the backward, and a second derivative refused with
sinkgrad's own message.

    PYTHONPATH=build/python python3 tests/torch/module_test.py
"""
import unittest
import warnings

import torch
from torch.profiler import ProfilerActivity, profile

from reference import backward_with_stats, import_layer, inputs, relative, unrolled_torch

sgt = import_layer()
NOT_TWICE = r"sinkgrad's backward is not differentiable twice"


class Module(unittest.TestCase):
    def test_forward_and_backward_are_the_functions(self):
        M, G = inputs(6, 5, seed=80)
        for settings in ({}, {"backward": "cg_corrected", "options": {"tolerance": 1e-12}},
                         {"backward": "auto", "forward": "rows_first", "eps": 1e-4},
                         {"backward": "direct", "forward": "tilekernels", "on_failure": "keep"}):
            layer = sgt.Sinkhorn(7, **settings)
            x = M.clone().requires_grad_(True)
            stats = sgt.SolveStats()
            R = layer(x, stats=stats)
            R.backward(G)
            expected, expected_stats = backward_with_stats(sgt, M, 7, G, **settings)
            self.assertTrue(torch.equal(R, sgt.sinkhorn(M, 7, **settings)), settings)
            self.assertTrue(torch.equal(x.grad, expected), settings)
            self.assertTrue(torch.equal(stats.status, expected_stats.status), settings)

    def test_settings_in_repr_and_attributes(self):
        layer = sgt.Sinkhorn(20, backward="cg_corrected", options={"max_iterations": 8},
                             forward="rows_first", eps=1e-6, on_failure="raise")
        self.assertEqual(repr(layer), "Sinkhorn(iterations=20, backward='cg_corrected', "
                         "forward='rows_first', eps=1e-06, on_failure='raise', "
                         "options={'max_iterations': 8})")
        self.assertEqual((layer.iterations, layer.backward, layer.forward_convention, layer.eps,
                          layer.on_failure), (20, "cg_corrected", "rows_first", 1e-6, "raise"))
        self.assertEqual(repr(sgt.Sinkhorn(3)), "Sinkhorn(iterations=3, backward='unrolled', "
                         "forward='columns_first', eps=None, on_failure='unrolled')")
        self.assertEqual(list(layer.parameters()), [])
        self.assertEqual(layer.state_dict(), {})

    def test_options_are_copied(self):
        options = {"tolerance": 1e-12}
        layer = sgt.Sinkhorn(5, backward="cg_corrected", options=options)
        options["tolerance"] = "not a number"
        M, _ = inputs(2, 4, seed=81)
        layer(M.requires_grad_(True)).sum().backward()

    def test_inside_sequential(self):
        M, G = inputs(4, 4, seed=82)
        torch.manual_seed(0)
        linear = torch.nn.Linear(4, 4, dtype=torch.float64)
        model = torch.nn.Sequential(linear, sgt.Sinkhorn(10, backward="unrolled"))
        self.assertIn("(1): Sinkhorn(iterations=10, backward='unrolled'", repr(model))
        x = M.clone().requires_grad_(True)
        (model(x) * G).sum().backward()
        # The same model written out with the plain-torch forward (reference.py).
        y = M.clone().requires_grad_(True)
        weight = linear.weight.detach().clone().requires_grad_(True)
        logits = torch.nn.functional.linear(y, weight, linear.bias.detach())
        self.assertLess(relative(model(M).detach(), sgt.sinkhorn(logits.detach(), 10)), 1e-15)
        grad_logits = unrolled_torch(logits.detach(), 10, G)
        logits.backward(grad_logits)
        self.assertLess(relative(x.grad, y.grad), 1e-10)
        self.assertLess(relative(linear.weight.grad[None], weight.grad[None]), 1e-10)

    def test_settings_are_checked_at_construction(self):
        for bad, error in (((0,), ValueError), ((2**32 + 1,), ValueError), ((2.0,), TypeError),
                           ((True,), TypeError)):
            with self.assertRaises(error):
                sgt.Sinkhorn(*bad)
        with self.assertRaisesRegex(ValueError, "forward='TE'"):
            sgt.Sinkhorn(3, forward="TE")
        with self.assertRaisesRegex(ValueError, "on_failure='retry'"):
            sgt.Sinkhorn(3, on_failure="retry")
        with self.assertRaisesRegex(TypeError, "options must be a dict"):
            sgt.Sinkhorn(3, options="tolerance=1")
        with self.assertRaisesRegex(ValueError, "unknown backward 'cg'"):  # on the first call
            sgt.Sinkhorn(3, backward="cg")(torch.zeros(2, 2))


class ProfilerNames(unittest.TestCase):
    def test_forward_and_backward_are_named_with_their_solver(self):
        M, G = inputs(8, 4, seed=83)
        for backward, forward in (("cg_corrected", "columns_first"), ("auto", "tilekernels")):
            x = M.clone().requires_grad_(True)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                sgt.sinkhorn(x, 5, backward=backward, forward=forward).backward(G)
            names = [event.name for event in prof.events()]
            self.assertEqual(names.count(f"sinkgrad::sinkhorn_forward[{forward}]"), 1, names)
            self.assertEqual(names.count(f"sinkgrad::sinkhorn_backward[{backward}]"), 1, names)

    def test_no_range_is_entered_without_a_profiler(self):
        # A range costs an op dispatch per call: the layer enters one only while profiling.
        M, _ = inputs(2, 3, seed=84)
        entered, original = [], torch.profiler.record_function

        def counted(name):
            entered.append(name)
            return original(name)

        torch.profiler.record_function = counted
        try:
            sgt.sinkhorn(M.clone().requires_grad_(True), 3).sum().backward()
            self.assertEqual(entered, [])
            with profile(activities=[ProfilerActivity.CPU]):
                sgt.sinkhorn(M.clone().requires_grad_(True), 3).sum().backward()
            self.assertEqual(entered, ["sinkgrad::sinkhorn_forward[columns_first]",
                                       "sinkgrad::sinkhorn_backward[unrolled]"])
        finally:
            torch.profiler.record_function = original


class DoubleBackward(unittest.TestCase):
    def setUp(self):
        self.M, self.G = inputs(3, 4, seed=85)

    def test_differentiating_the_gradient_raises(self):
        for loss in (lambda R: (R * self.G).sum(),          # grad_R a constant
                     lambda R: (R * self.G).square().sum()):  # grad_R depends on R
            x = self.M.clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(loss(sgt.sinkhorn(x, 5, backward="cg_corrected")), x,
                                          create_graph=True)
            self.assertTrue(grad.requires_grad)
            with self.assertRaisesRegex(RuntimeError, NOT_TWICE):
                torch.autograd.grad(grad.square().sum(), x)
            with self.assertRaisesRegex(RuntimeError, NOT_TWICE):
                grad.sum().backward()

    def test_create_graph_alone_gives_the_gradient(self):
        x = self.M.clone().requires_grad_(True)
        with warnings.catch_warnings():  # torch's note on the cycle through .grad, undone below
            warnings.simplefilter("ignore", UserWarning)
            (sgt.sinkhorn(x, 5) * self.G).sum().backward(create_graph=True)
        self.assertLess(relative(x.grad.detach(), unrolled_torch(self.M, 5, self.G)), 1e-10)
        x.grad = None  # no reference cycle kept through .grad

    def test_gradgradcheck_is_refused(self):
        x = self.M[:1].clone().requires_grad_(True)
        with self.assertRaisesRegex(RuntimeError, NOT_TWICE):
            torch.autograd.gradgradcheck(lambda t: sgt.sinkhorn(t, 4), (x,))


if __name__ == "__main__":
    unittest.main()
