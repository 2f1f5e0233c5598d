"""sinkgrad for PyTorch: a differentiable Sinkhorn layer whose backward is any registered
sinkgrad solver, on the cpu and on CUDA (docs/pytorch.md).

    import sinkgrad.torch as sgt
    R = sgt.sinkhorn(logits, 20, backward="auto")   # logits: (..., n, n)
    (R * weights).sum().backward()

Half-precision logits (bfloat16, float16) are computed in float32 and R is cast back, as the
production mHC kernels do. On CUDA the layer runs on PyTorch's current stream, never waits for
the GPU (unless on_failure="raise") and allocates only through PyTorch, so it can be captured
into a CUDA graph. Every forward convention of the library runs (forward=, eps=): the backward
differentiates the forward that ran. torch.compile traces it through the custom ops of _ops.py
(torch >= 2.4) without a graph break; eager calls use a plain autograd.Function.
"""
import math
import numbers

import torch

from sinkgrad import _kernels, _ops
from sinkgrad._capi import STATUS_NAMES, SinkgradError, default_eps, load_plugin
from sinkgrad._kernels import SolveFailure

__all__ = ["sinkhorn", "SolveStats", "load_plugin", "default_eps", "SinkgradError",
           "SolveFailure", "STATUS_NAMES", "FORWARDS", "ON_FAILURE"]

# The dtype each accepted input dtype is computed in, and its name for the solver check.
_COMPUTE = {torch.float32: torch.float32, torch.float64: torch.float64,
            torch.bfloat16: torch.float32, torch.float16: torch.float32}
_COMPUTE_NAME = {torch.float32: "float32", torch.float64: "float64",
                 torch.bfloat16: "float32", torch.float16: "float32"}
FORWARDS = ("columns_first", "rows_first", "tilekernels")
ON_FAILURE = ("keep", "unrolled", "raise")


class SolveStats:
    """Per-matrix outcome of the last backward through the sinkhorn call it was given to:
    status and iterations, int32 tensors of shape logits.shape[:-2] on the logits' device
    (None until a backward has run). status codes index status_names: 0 ok, 1 not_converged,
    2 breakdown, 3 invalid_input, 4 ill_conditioned, 5 fallback (the exact unrolled gradient in
    place of the implicit one: backward="auto"); docs/math.md. Every code but ok and fallback
    counts as a failure for on_failure. Also per matrix, of the same shape (docs/math.md,
    "Diagnostics of a solve"): row_violation and column_violation (max |r_i - 1| and
    max |c_j - 1| of the forward's R, in its compute dtype), relative_residual (CG's final
    ||r|| / ||b||; NaN where no CG ran) and zero_entries (int32: entries of R that are exactly 0,
    where exp underflowed and the exact gradient is 0 too). Filling them never waits for the
    GPU."""

    status_names = STATUS_NAMES

    def __init__(self):
        self.status = None
        self.iterations = None
        self.row_violation = None
        self.column_violation = None
        self.relative_residual = None
        self.zero_entries = None

    def failed(self):
        """A bool tensor, True where the solver reported neither ok nor fallback."""
        return _kernels.failed(self.status)

    def counts(self):
        """{status name: number of matrices} (waits for the GPU)."""
        counts = torch.bincount(self.status.long().flatten(), minlength=len(STATUS_NAMES))
        return dict(zip(STATUS_NAMES, counts.tolist()))

    def __repr__(self):
        if self.status is None:
            return "SolveStats(no backward yet)"
        return f"SolveStats({self.counts()})"


def _options_text(options):
    """{"key": value} as the library's "key=value,key=value" (what --option key=value takes)."""
    if options is None:
        return ""
    if not isinstance(options, dict):
        raise TypeError(f"sinkhorn: options must be a dict, got {type(options).__name__}")
    parts = []
    for key, value in options.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if not isinstance(key, str) or "," in key or "=" in key or "," in text:
            raise ValueError(f"sinkhorn: option {key!r}={text!r} cannot be passed on "
                             "(keys are names; neither may contain ',')")
        parts.append(f"{key}={text}")
    return ",".join(parts)


def _forward_convention(forward, eps):
    """(name, eps) of the forward the layer runs and differentiates (docs/math.md, "Forward
    conventions"); refuses an unknown name or an eps that is not a finite number >= 0."""
    if not isinstance(forward, str) or forward not in FORWARDS:
        raise ValueError(f"sinkhorn: forward={forward!r} is not a forward convention (use "
                         f"{', '.join(FORWARDS)})")
    if eps is None:  # NaN: the binding takes the convention's own from the library's one table
        return forward, math.nan
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"sinkhorn: eps must be a number or None, got {type(eps).__name__}")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"sinkhorn: eps must be finite and >= 0, got {eps!r}")
    return forward, float(eps)


def _constant_result(function):
    """torch.compile calls the decorated function while tracing and keeps its result, instead
    of tracing into the ctypes calls behind it."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "assume_constant_result"):
        return compiler.assume_constant_result(function)
    return function


_checked = set()


@_constant_result
def _check_solver(backward, options, device_type, dtype_name):
    """Raises ValueError with the library's message unless the solver exists, takes these
    options and runs on this device in this dtype; each combination is checked once."""
    key = (backward, options, device_type, dtype_name)
    if key not in _checked:
        try:
            _kernels.check_solver(backward, options, device_type, getattr(torch, dtype_name))
        except SinkgradError as error:
            raise ValueError(f"sinkhorn: {error}") from None
        _checked.add(key)
    return True


def _flat(logits):
    """The library's input: a contiguous (B, n, n) batch in the compute dtype (no copy when the
    logits are one already)."""
    n = logits.shape[-1]
    return logits.to(_COMPUTE[logits.dtype]).reshape(-1, n, n).contiguous()


def _shaped(R, logits):
    """R back in the logits' shape and dtype."""
    return R.view(logits.shape).to(logits.dtype)


def _forward(ctx, logits, iterations, backward, options, on_failure, stats, convention):
    M = _flat(logits)
    R = _kernels.forward(M, iterations, convention)
    ctx.save_for_backward(M, R)
    ctx.setup = (logits.shape, logits.dtype, iterations, backward, options, on_failure, stats,
                 convention)
    return _shaped(R, logits)


def _backward(ctx, grad_R):
    shape, dtype, iterations, backward, options, on_failure, stats, convention = ctx.setup
    M, R = ctx.saved_tensors
    G = grad_R.to(R.dtype).reshape(R.shape).contiguous()
    diagnostics = {} if stats is not None else None
    grad, status, steps = _kernels.backward(M, R, G, iterations, backward, options, on_failure,
                                            convention, diagnostics)
    if stats is not None:
        stats.status = status.view(shape[:-2])
        stats.iterations = steps.view(shape[:-2])
        for name, values in diagnostics.items():
            setattr(stats, name, values.view(shape[:-2]))
    return grad.view(shape).to(dtype), None, None, None, None, None, None


class _Sinkhorn(torch.autograd.Function):
    """The eager layer: the library called directly, no custom-op dispatch."""
    forward = staticmethod(_forward)
    # once_differentiable: a second derivative fails instead of being silently wrong.
    backward = staticmethod(torch.autograd.function.once_differentiable(_backward))


def _compiled(logits, iterations, backward, options, on_failure, convention):
    """The layer as torch.compile traces it: casts and reshapes in torch, the library calls as
    the custom ops of _ops.py (their registered autograd gives the backward)."""
    R = _ops.sinkhorn(_flat(logits), iterations, backward, options, on_failure, *convention)
    return _shaped(R, logits)


def sinkhorn(logits, iterations, *, backward="unrolled", options=None, forward="columns_first",
             eps=None, stats=None, on_failure="unrolled"):
    """R = Sinkhorn_T(exp(logits)) over the last two dims, differentiable w.r.t. logits.

    logits: (..., n, n), float32 / float64 / bfloat16 / float16, cpu or CUDA, any strides.
    iterations: T >= 1. backward: a registered solver name (built-in: unrolled, auto,
    cg_plain, cg_corrected, direct; plugins after load_plugin). "auto" is the implicit backward
    safe to train with: cg_corrected per matrix, the exact unrolled gradient where that fails or
    the forward is too far from converged (status fallback). options: a dict passed to the solver as
    --option key=value is. forward: the forward convention, "columns_first" (exp(logits), T times
    columns then rows), "rows_first" (TransformerEngine: rows then columns) or "tilekernels"
    (DeepSeek TileKernels: softmax_rows(logits) + eps, columns, then T - 1 times rows and
    columns); the backward differentiates the forward chosen. eps: added to every normalising
    denominator, X / (X.sum(axis) + eps), finite and >= 0; None is the convention's own (1e-6
    for tilekernels, 0 for the others). stats: a SolveStats to receive the backward's per-matrix status and iterations.
    on_failure: "unrolled" (the default: failed matrices are recomputed by the unrolled solver,
    those only, without waiting for the GPU; their status stays the solver's), "keep" (they
    keep what the solver wrote: NaN, or the last CG iterate), "raise" (SolveFailure naming how
    many failed and why; waits for the GPU). Bad names, options or dtypes raise TypeError /
    ValueError before anything runs."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"sinkhorn: logits must be a torch.Tensor, got {type(logits).__name__}")
    if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"sinkhorn: logits must have shape (..., n, n), got "
                         f"{tuple(logits.shape)}")
    if logits.dtype not in _COMPUTE:
        raise TypeError(f"sinkhorn: logits of dtype {logits.dtype} are not supported (float32, "
                        "float64, bfloat16 or float16)")
    if logits.device.type not in ("cpu", "cuda"):
        raise ValueError(f"sinkhorn: logits on {logits.device} are not supported (cpu or cuda)")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"sinkhorn: iterations must be an int >= 1, got {iterations!r}")
    if not isinstance(backward, str):
        raise TypeError(f"sinkhorn: backward must be a solver name, got {backward!r}")
    if on_failure not in ON_FAILURE:
        raise ValueError(f"sinkhorn: on_failure={on_failure!r} is not one of "
                         f"{', '.join(ON_FAILURE)}")
    if stats is not None and not isinstance(stats, SolveStats):
        raise TypeError("sinkhorn: stats must be a sinkgrad.torch.SolveStats or None")
    convention = _forward_convention(forward, eps)
    options = _options_text(options)
    dtype_name = _COMPUTE_NAME[logits.dtype]
    _check_solver(backward, options, logits.device.type, dtype_name)
    if on_failure == "unrolled":
        _check_solver("unrolled", "", logits.device.type, dtype_name)
    if _ops.is_compiling():
        if not _ops.CUSTOM_OPS:
            raise RuntimeError("sinkhorn: torch.compile needs torch >= 2.4 (torch.library "
                               "custom ops with registered autograd)")
        if stats is not None:
            raise ValueError("sinkhorn: stats is not available under torch.compile (a custom "
                             "op cannot fill a Python object); pass stats=None there")
        return _compiled(logits, iterations, backward, options, on_failure, convention)
    return _Sinkhorn.apply(logits, iterations, backward, options, on_failure, stats, convention)
