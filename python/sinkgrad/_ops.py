"""The layer under torch.compile (torch >= 2.4): its forward as a torch.library custom op whose
autograd is registered on the op itself (torch.library.register_autograd), its backward as a
second custom op, both with fake implementations that give only shapes. torch.compile traces
them without a graph break; eager calls take the cheaper autograd.Function of torch.py (a custom
op's dispatch adds host time to every call; measured: docs/performance.md).

    sinkhorn(logits, iterations, solver, options, on_failure, convention, eps) -> R
    sinkhorn_backward(logits, R, grad_R, iterations, solver, options, on_failure, convention,
                      eps) -> (grad_logits, status, iterations)

logits: a flat (B, n, n) contiguous float32 / float64 tensor. The forward op takes the backward's
arguments too, so that its registered backward knows them. A custom op cannot hand a Python
object its results, so per-matrix statistics (SolveStats) exist only in eager mode.
"""
import torch

from sinkgrad import _kernels

CUSTOM_OPS = (hasattr(torch, "library") and hasattr(torch.library, "custom_op") and
              hasattr(torch.library, "register_autograd"))


# torch.compiler.is_compiling where torch has it, looked up once (every layer call asks).
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)


def is_compiling():
    """True while torch.compile (dynamo) traces the caller."""
    return _is_compiling is not None and _is_compiling()


if CUSTOM_OPS:

    @torch.library.custom_op("sinkgrad::sinkhorn", mutates_args=())
    def sinkhorn(logits: torch.Tensor, iterations: int, solver: str, options: str,
                 on_failure: str, convention: str, eps: float) -> torch.Tensor:
        return _kernels.forward(logits, iterations, (convention, eps))

    @sinkhorn.register_fake
    def _sinkhorn_fake(logits, iterations, solver, options, on_failure, convention, eps):
        return torch.empty_like(logits)

    @torch.library.custom_op("sinkgrad::sinkhorn_backward", mutates_args=())
    def sinkhorn_backward(logits: torch.Tensor, R: torch.Tensor, grad_R: torch.Tensor,
                          iterations: int, solver: str, options: str, on_failure: str,
                          convention: str,
                          eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _kernels.backward(logits, R, grad_R, iterations, solver, options, on_failure,
                                 (convention, eps))

    @sinkhorn_backward.register_fake
    def _sinkhorn_backward_fake(logits, R, grad_R, iterations, solver, options, on_failure,
                                convention, eps):
        per_matrix = R.new_empty((R.shape[0],), dtype=torch.int32)
        return torch.empty_like(R), per_matrix, torch.empty_like(per_matrix)

    def _setup_context(ctx, inputs, output):
        logits, *arguments = inputs
        ctx.save_for_backward(logits, output)
        ctx.arguments = arguments

    def _backward(ctx, grad_R):
        logits, R = ctx.saved_tensors
        grad, _, _ = sinkhorn_backward(logits, R, grad_R.contiguous(), *ctx.arguments)
        return (grad,) + (None,) * len(ctx.arguments)

    torch.library.register_autograd("sinkgrad::sinkhorn", _backward,
                                    setup_context=_setup_context)
