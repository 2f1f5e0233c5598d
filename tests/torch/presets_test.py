"""sinkgrad.torch's forward presets of other projects (docs/math.md, "Who computes which
forward"), in float64: R against a torch transcription of each project's reference code and
the layer's unrolled gradient against torch.autograd of that transcription. Read from:
  NVIDIA/Megatron-LM d98e8a6 (main), megatron/core/transformer/hyper_connection.py,
    SinkhornKnopp (megatron_main)
  SandAI-org/MAGI-2-preview f68a0f9, inference/model/magi2_preview.py, _sinkhorn_knopp (magi2)
  WithNucleusAI/mHC-triton aa21c11, src/mhc/_torch_baseline.py, sinkhorn_knopp_torch
    (mhc_triton; src/mhc/_kernels.py's _sinkhorn_kernel computes the same)
  AI-Hypercomputer/maxtext e591f30, src/maxtext/layers/mhc.py, sinkhorn (maxtext)

    PYTHONPATH=build/python python3 tests/torch/presets_test.py
"""
import unittest

import torch

from reference import import_layer

sgt = import_layer()


def megatron_main(x, T, eps):
    m = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    for _ in range(T):
        m = m / m.sum(dim=-1, keepdim=True).clamp(min=eps)
        m = m / m.sum(dim=-2, keepdim=True).clamp(min=eps)
    return m


def magi2(x, T, eps):
    m = torch.exp(x - x.amax(dim=(-2, -1), keepdim=True))
    for _ in range(T):
        m = m / (m.sum(dim=-2, keepdim=True) + eps)
        m = m / (m.sum(dim=-1, keepdim=True) + eps)
    return m


def mhc_triton(x, T, eps):
    p = x.abs() + eps
    for _ in range(T):
        p = p / (p.sum(dim=-1, keepdim=True) + eps)
        p = p / (p.sum(dim=-2, keepdim=True) + eps)
    return p


def maxtext(x, T, eps):
    t = torch.softmax(x, dim=-1) + eps
    t = t / (t.sum(dim=-2, keepdim=True) + eps)
    for _ in range(T - 1):
        t = t / (t.sum(dim=-1, keepdim=True) + eps)
        t = t / (t.sum(dim=-2, keepdim=True) + eps)
    return t


TRANSCRIPTIONS = {"megatron_main": megatron_main, "magi2": magi2, "mhc_triton": mhc_triton,
                  "maxtext": maxtext}


class Presets(unittest.TestCase):
    def test_forward_and_unrolled_gradient_match_autograd_of_the_reference(self):
        generator = torch.Generator().manual_seed(51)
        for name, transcription in TRANSCRIPTIONS.items():
            for eps in (None, 1e-3):
                used = sgt.default_eps(name) if eps is None else eps
                for n in (1, 2, 4, 7, 16):
                    for T in (1, 3, 20):
                        for scale in (2.0, 30.0):
                            case = (name, used, n, T, scale)
                            M = torch.randn(3, n, n, generator=generator, dtype=torch.float64)
                            M = (M * scale).requires_grad_(True)
                            G = torch.randn(3, n, n, generator=generator, dtype=torch.float64)
                            R = sgt.sinkhorn(M, T, forward=name, eps=eps)
                            (grad,) = torch.autograd.grad(R, M, G)
                            Mref = M.detach().clone().requires_grad_(True)
                            Rref = transcription(Mref, T, used)
                            (exact,) = torch.autograd.grad(Rref, Mref, G)
                            self.assertLess((R - Rref).abs().max().item(), 1e-13, case)
                            floor = max(1e-10 * exact.abs().max().item(), 1e-14)
                            self.assertLess((grad - exact).abs().max().item(), floor, case)

    def test_default_eps_come_from_the_library(self):
        self.assertEqual(sgt.default_eps("megatron_main"), 1e-6)
        self.assertEqual(sgt.default_eps("magi2"), 1e-12)
        self.assertEqual(sgt.default_eps("mhc_triton"), 1e-8)
        self.assertEqual(sgt.default_eps("maxtext"), sgt.default_eps("tilekernels"))


if __name__ == "__main__":
    unittest.main()
