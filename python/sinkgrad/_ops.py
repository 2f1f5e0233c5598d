"""The layer's two library calls as torch.library custom ops (torch >= 2.4), with fake
implementations that give only shapes, so that torch.compile(fullgraph=True) traces through
them without a graph break; with an older torch, the plain functions of _kernels.

    forward(logits, iterations) -> R
    backward(logits, R, grad_output, iterations, solver, options, on_failure)
        -> (grad_logits, status, iterations)
"""
import torch

from sinkgrad import _kernels

CUSTOM_OPS = hasattr(torch, "library") and hasattr(torch.library, "custom_op")

if CUSTOM_OPS:

    @torch.library.custom_op("sinkgrad::forward", mutates_args=())
    def forward(logits: torch.Tensor, iterations: int) -> torch.Tensor:
        return _kernels.forward(logits, iterations)

    @forward.register_fake
    def _forward_fake(logits, iterations):
        return torch.empty_like(logits)

    @torch.library.custom_op("sinkgrad::backward", mutates_args=())
    def backward(logits: torch.Tensor, R: torch.Tensor, grad_output: torch.Tensor,
                 iterations: int, solver: str, options: str,
                 on_failure: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _kernels.backward(logits, R, grad_output, iterations, solver, options,
                                 on_failure)

    @backward.register_fake
    def _backward_fake(logits, R, grad_output, iterations, solver, options, on_failure):
        per_matrix = R.new_empty((R.shape[0],), dtype=torch.int32)
        return torch.empty_like(R), per_matrix, torch.empty_like(per_matrix)

else:
    forward = _kernels.forward
    backward = _kernels.backward
