"""sinkgrad for PyTorch: a differentiable Sinkhorn layer whose backward is any registered
sinkgrad solver, on the cpu and on CUDA (docs/pytorch.md).

    import sinkgrad.torch as sgt
    R = sgt.sinkhorn(logits, 20, backward="auto")   # logits: (..., n, n)
    (R * weights).sum().backward()
    layer = sgt.Sinkhorn(20, backward="auto")       # the same as a torch.nn.Module

Half-precision logits (bfloat16, float16) are computed in float32 and R is cast back, as the
production mHC kernels do. On CUDA the layer runs on PyTorch's current stream, never waits for
the GPU (unless on_failure="raise") and allocates only through PyTorch, so it can be captured
into a CUDA graph. Every forward convention of the library runs (forward=, eps=): the backward
differentiates the forward that ran. torch.compile traces it through the custom ops of _ops.py
(torch >= 2.4) without a graph break; eager calls use a plain autograd.Function, which the
profiler shows as sinkgrad::sinkhorn_forward[convention] and sinkgrad::sinkhorn_backward[solver].
A second derivative is refused (RuntimeError), never silently wrong.
"""
import contextlib

import torch

from sinkgrad import _arguments, _kernels, _ops
from sinkgrad._arguments import FORWARDS, MAX_ITERATIONS, ON_FAILURE
from sinkgrad._capi import STATUS_NAMES, SinkgradError, library, load_plugin
from sinkgrad._kernels import SolveFailure

__all__ = ["sinkhorn", "Sinkhorn", "SolveStats", "load_plugin", "default_eps", "SinkgradError",
           "SolveFailure", "STATUS_NAMES", "FORWARDS", "ON_FAILURE", "MAX_ITERATIONS"]
DOUBLE_BACKWARD = ("sinkgrad.torch.sinkhorn: sinkgrad's backward is not differentiable twice "
                   "(a gradient computed with create_graph=True cannot be differentiated again: "
                   "no double backward, gradgradcheck or Hessian through it)")


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

    def _filled(self, method):
        # Before a backward nothing ran: neither a failure nor a count of zero would be true.
        if self.status is None:
            raise RuntimeError(f"sinkgrad.torch.SolveStats.{method}: no backward has filled "
                               "this SolveStats yet (pass it as stats= to sinkhorn and run the "
                               "backward first)")

    def failed(self):
        """A bool tensor, True where the solver reported neither ok nor fallback (RuntimeError
        before a backward has run)."""
        self._filled("failed")
        return _kernels.failed(self.status)

    def counts(self):
        """{status name: number of matrices} (waits for the GPU; RuntimeError before a backward
        has run)."""
        self._filled("counts")
        counts = torch.bincount(self.status.long().flatten(), minlength=len(STATUS_NAMES))
        return dict(zip(STATUS_NAMES, counts.tolist()))

    def __repr__(self):
        if self.status is None:
            return "SolveStats(no backward yet)"
        return f"SolveStats({self.counts()})"


def default_eps(forward):
    """The eps the library adds for the forward convention `forward` (a name of FORWARDS) when
    none is given: TypeError for a name that is not a str, ValueError for an unknown one or one
    with a NUL, SinkgradError when the library cannot be loaded."""
    where = "sinkgrad.torch.default_eps"
    try:
        lib = library()
    except SinkgradError as error:
        raise SinkgradError(f"{where}: {error}") from None
    try:
        return lib.default_eps(forward)
    except TypeError as error:
        raise TypeError(f"{where}: {error}") from None
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    except SinkgradError as error:  # the library's only refusal: an unknown name
        raise ValueError(f"{where}: {error.reason}") from None


def _flat(logits):
    """The library's input: a contiguous (B, n, n) batch in the compute dtype (no copy when the
    logits are one already, and not even a view: each op dispatched costs host time)."""
    n = logits.shape[-1]
    compute = _arguments.COMPUTE[logits.dtype]
    if logits.dtype == compute and logits.dim() == 3 and logits.is_contiguous():
        return logits
    return logits.to(compute).reshape(-1, n, n).contiguous()


def _shaped(R, logits):
    """R back in the logits' shape and dtype (R itself when it has them)."""
    if R.dtype == logits.dtype and R.shape == logits.shape:
        return R
    return R.view(logits.shape).to(logits.dtype)


# Whether a profiler runs: a range costs an op dispatch on every call, so it is entered only then.
_profiling = (getattr(torch.autograd, "_profiler_enabled", None) or
              getattr(torch._C._autograd, "_profiler_enabled", lambda: True))
_NO_RANGE = contextlib.nullcontext()


def _profiler_range(step, what):
    """The profiler's sinkgrad::sinkhorn_forward[convention] / sinkhorn_backward[solver]."""
    if _profiling():
        return torch.profiler.record_function(f"sinkgrad::sinkhorn_{step}[{what}]")
    return _NO_RANGE


def _backward(ctx, grad_R):
    shape, dtype, iterations, backward, options, on_failure, stats, convention = ctx.setup
    M, R, _ = ctx.saved_tensors
    G = grad_R
    if G.dtype != R.dtype or G.shape != R.shape or not G.is_contiguous():
        G = G.to(R.dtype).reshape(R.shape).contiguous()
    diagnostics = {} if stats is not None else None
    grad, status, steps = _kernels.backward(M, R, G, iterations, backward, options, on_failure,
                                            convention, diagnostics)
    if stats is not None:
        stats.status = status.view(shape[:-2])
        stats.iterations = steps.view(shape[:-2])
        for name, values in diagnostics.items():
            setattr(stats, name, values.view(shape[:-2]))
    if grad.dtype == dtype and grad.shape == shape:
        return grad
    return grad.view(shape).to(dtype)


class _NotTwice(torch.autograd.Function):
    """The gradient of a backward run with create_graph=True, tied to the graph it came from
    (R, and grad_R when that has a graph): differentiating it raises. Without the tie it would
    be a constant to autograd, and a loss built on it would silently lose the second-derivative
    term."""

    @staticmethod
    def forward(ctx, grad, *anchors):
        return grad.clone()  # a new tensor: .grad may be detached or zeroed in place later

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError(DOUBLE_BACKWARD)


class _Sinkhorn(torch.autograd.Function):
    """The eager layer: the library called directly, no custom-op dispatch."""

    @staticmethod
    def forward(ctx, logits, iterations, backward, options, on_failure, stats, convention):
        with _profiler_range("forward", convention[0]):
            M = _flat(logits)
            R = _kernels.forward(M, iterations, convention)
            output = _shaped(R, logits)
        # output is saved to tie a create_graph=True gradient to this graph (_NotTwice); it is
        # R itself in float32 / float64, and a half R is saved by whatever consumes it anyway.
        ctx.save_for_backward(M, R, output)
        ctx.setup = (logits.shape, logits.dtype, iterations, backward, options, on_failure, stats,
                     convention)
        return output

    @staticmethod
    def backward(ctx, grad_R):
        # Grad mode is on only under create_graph=True; otherwise no_grad would change nothing.
        twice = torch.is_grad_enabled()
        with torch.no_grad() if twice else _NO_RANGE, _profiler_range("backward", ctx.setup[3]):
            grad = _backward(ctx, grad_R)
        if twice:  # create_graph=True: refuse a second derivative later
            anchors = [ctx.saved_tensors[2]] + ([grad_R] if grad_R.requires_grad else [])
            grad = _NotTwice.apply(grad, *anchors)
        return grad, None, None, None, None, None, None


def _compiled(logits, iterations, backward, options, on_failure, convention):
    """The layer as torch.compile traces it: casts and reshapes in torch, the library calls as
    the custom ops of _ops.py (their registered autograd gives the backward)."""
    R = _ops.sinkhorn(_flat(logits), iterations, backward, options, on_failure, *convention)
    return _shaped(R, logits)


def sinkhorn(logits, iterations, *, backward="unrolled", options=None, forward="columns_first",
             eps=None, stats=None, on_failure="unrolled"):
    """R = Sinkhorn_T(exp(logits)) over the last two dims, differentiable w.r.t. logits.

    logits: (..., n, n), n >= 1, float32 / float64 / bfloat16 / float16, cpu or CUDA, any
    strides. iterations: T, an int from 1 to MAX_ITERATIONS (10**6). backward: a registered
    solver name (built-in: unrolled, auto, cg_plain, cg_corrected, direct; plugins from
    SINKGRAD_PLUGIN_PATH or load_plugin). "auto" is the implicit backward safe to train with:
    cg_corrected per matrix, the exact unrolled gradient where that fails, where the forward is
    too far from converged, or where the implicit gradient is too small beside that distance to
    be trusted, as with copied streams (status fallback). Under tilekernels (eps > 0) and mhc_triton the implicit
    solvers' gradient is carried from log B to the logits (docs/math.md). options: a dict passed
    to the solver as --option key=value is. forward: the forward convention, "columns_first" (exp(logits), T times
    columns then rows), "rows_first" (TransformerEngine: rows then columns) or "tilekernels"
    (DeepSeek TileKernels, MaxText: softmax_rows(logits) + eps, columns, then T - 1 times rows
    and columns), "megatron_main" (Megatron-LM main: exp(logits - row max), T times rows then
    columns, denominators max(sum, eps)), "magi2" (MAGI-2: exp(logits - global max), T times
    columns then rows) or "mhc_triton" (NucleusAI mHC-triton: |logits| + eps, T times rows then
    columns); aliases "maxtext" and "megatron_dev" name tilekernels (docs/math.md, "Forward
    conventions"). The backward differentiates the forward chosen. eps: of every normalising
    denominator, X / (X.sum(axis) + eps) (max(sum, eps) for megatron_main), finite and >= 0;
    None is the convention's own (sinkgrad.torch.default_eps). stats: a SolveStats to receive
    the backward's per-matrix status and iterations.
    on_failure: "unrolled" (the default: failed matrices are recomputed by the unrolled solver,
    those only, without waiting for the GPU; their status stays the solver's), "keep" (they
    keep what the solver wrote: NaN, or the last CG iterate), "raise" (SolveFailure naming how
    many failed and why; waits for the GPU). Bad names, options, dtypes or integers raise
    TypeError / ValueError before anything runs. The gradient cannot be differentiated again
    (RuntimeError)."""
    _arguments.check_logits(logits)
    if stats is not None and not isinstance(stats, SolveStats):
        raise TypeError(f"{_arguments.WHERE}: stats must be a sinkgrad.torch.SolveStats or None")
    if _ops.is_compiling():
        if not _ops.CUSTOM_OPS:
            raise RuntimeError(f"{_arguments.WHERE}: torch.compile needs torch >= 2.4 "
                               "(torch.library custom ops with registered autograd)")
        if stats is not None:
            raise ValueError(f"{_arguments.WHERE}: stats is not available under torch.compile "
                             "(a custom op cannot fill a Python object); pass stats=None there")
        iterations, options, convention = _settle(logits, iterations, backward, options, forward,
                                                  eps, on_failure)
        return _compiled(logits, iterations, backward, options, on_failure, convention)
    # Settings of plain types are checked once and remembered (the checks cost host time on
    # every step); the key holds the types, as True == 1 and 0 == 0.0 == False.
    key = None
    if (options is None and type(iterations) is int and type(backward) is str and
            type(forward) is str and type(on_failure) is str and
            (eps is None or type(eps) is float or type(eps) is int)):
        key = (iterations, backward, forward, type(eps), eps, on_failure, logits.dtype,
               logits.is_cuda)
        settled = _SETTLED.get(key)
    if key is None or settled is None:
        settled = _settle(logits, iterations, backward, options, forward, eps, on_failure)
        if key is not None:
            if len(_SETTLED) >= 256:  # an eps that changes every step must not grow it forever
                _SETTLED.clear()
            _SETTLED[key] = settled
    iterations, options, convention = settled
    return _Sinkhorn.apply(logits, iterations, backward, options, on_failure, stats, convention)


_SETTLED = {}


def _settle(logits, iterations, backward, options, forward, eps, on_failure):
    """Every check of sinkhorn()'s settings (the solver's by the library, once per combination):
    (T, options text, (forward, eps))."""
    iterations = _arguments.check_iterations(iterations)
    _arguments.check_choices(backward, on_failure)
    convention = _arguments.forward_convention(forward, eps)
    options = _arguments.options_text(options)
    dtype_name = _arguments.COMPUTE_NAME[logits.dtype]
    device_type = "cuda" if logits.is_cuda else "cpu"  # check_logits allows no other
    # Each combination asks the library once; later calls find it in check_solver's memo.
    _arguments.check_solver(backward, options, device_type, dtype_name)
    if on_failure == "unrolled":
        _arguments.check_solver("unrolled", "", device_type, dtype_name)
    return iterations, options, convention


class Sinkhorn(torch.nn.Module):
    """sinkhorn() as a module: the settings given once (checked here, the solver's name and
    options on the first call, by the library), the logits per call.

        mix = sgt.Sinkhorn(20, backward="auto")
        R = mix(logits)                      # sgt.sinkhorn(logits, 20, backward="auto")
        R = mix(logits, stats=stats)         # a SolveStats filled by the backward

    It has no parameters or buffers. The settings are its attributes (iterations, backward,
    options, forward_convention: the forward= argument, eps, on_failure) and its repr."""

    def __init__(self, iterations, *, backward="unrolled", options=None,
                 forward="columns_first", eps=None, on_failure="unrolled"):
        super().__init__()
        self.iterations = _arguments.check_iterations(iterations)
        _arguments.check_choices(backward, on_failure)
        _arguments.forward_convention(forward, eps)
        _arguments.options_text(options)
        self.backward = backward
        # A copy: the caller's dict may change later.
        self.options = dict(options) if options is not None else None
        self.forward_convention = forward  # not self.forward: that is the module's call
        self.eps = eps
        self.on_failure = on_failure

    def forward(self, logits, stats=None):
        return sinkhorn(logits, self.iterations, backward=self.backward, options=self.options,
                        forward=self.forward_convention, eps=self.eps, stats=stats,
                        on_failure=self.on_failure)

    def extra_repr(self):
        text = (f"iterations={self.iterations}, backward={self.backward!r}, "
                f"forward={self.forward_convention!r}, eps={self.eps!r}, "
                f"on_failure={self.on_failure!r}")
        return text if self.options is None else f"{text}, options={self.options!r}"
