"""The PyTorch layer's argument checks (sgt.sinkhorn and sgt.Sinkhorn), all made before any work
and all raising in Python terms: a message that starts with the function the caller called and
names the argument, the value and what is allowed, never a C function of the library."""
import math
import numbers
import reprlib

import torch

from sinkgrad import _kernels
from sinkgrad._capi import SinkgradError, checked_int, library

WHERE = "sinkgrad.torch.sinkhorn"
# The library's names (core/forward_spec.cpp): its presets, then the aliases of a preset.
FORWARDS = ("columns_first", "rows_first", "tilekernels", "megatron_main", "magi2", "mhc_triton",
            "maxtext", "megatron_dev")
ON_FAILURE = ("keep", "unrolled", "raise")
# The forward's T: the command line's bound (sinkgrad grad --iterations), far beyond any T a
# model trains with; unrolled keeps O(nT) per matrix.
MAX_ITERATIONS = 10**6
# The dtype each accepted input dtype is computed in, and its name for the solver check.
COMPUTE = {torch.float32: torch.float32, torch.float64: torch.float64,
           torch.bfloat16: torch.float32, torch.float16: torch.float32}
COMPUTE_NAME = {torch.float32: "float32", torch.float64: "float64",
                torch.bfloat16: "float32", torch.float16: "float32"}


def check_logits(logits):
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"{WHERE}: logits must be a torch.Tensor, got {type(logits).__name__}")
    shape = logits.shape  # read once: every read builds a torch.Size
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 1:
        raise ValueError(f"{WHERE}: logits must have shape (..., n, n) with n >= 1, got "
                         f"{tuple(shape)}")
    # Sparse (and mkldnn) tensors have no strides for the library to read.
    if logits.layout is not torch.strided:
        raise ValueError(f"{WHERE}: logits of layout {logits.layout} are not supported (a dense "
                         "tensor: logits.to_dense())")
    if logits.dtype not in COMPUTE:
        raise TypeError(f"{WHERE}: logits of dtype {logits.dtype} are not supported (float32, "
                        "float64, bfloat16 or float16)")
    # is_cuda first: logits.device builds a torch.device on every read.
    if not logits.is_cuda and logits.device.type != "cpu":
        raise ValueError(f"{WHERE}: logits on {logits.device} are not supported (cpu or cuda)")


def check_iterations(iterations):
    """T as an int in [1, MAX_ITERATIONS]: TypeError for a bool, float or other non-integer,
    ValueError with the value as given otherwise."""
    try:
        return checked_int("iterations", iterations, 1, MAX_ITERATIONS)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{WHERE}: {error}") from None


def check_choices(backward, on_failure):
    if not isinstance(backward, str):
        raise TypeError(f"{WHERE}: backward must be a solver name, got {backward!r}")
    if "\0" in backward:
        raise ValueError(f"{WHERE}: backward={backward!r} cannot contain NUL characters")
    if not isinstance(on_failure, str) or on_failure not in ON_FAILURE:
        raise ValueError(f"{WHERE}: on_failure={on_failure!r} is not one of "
                         f"{', '.join(ON_FAILURE)}")


def options_text(options):
    """{"key": value} as the library's "key=value,key=value" (what --option key=value takes)."""
    if options is None:
        return ""
    if not isinstance(options, dict):
        raise TypeError(f"{WHERE}: options must be a dict, got {type(options).__name__}")
    parts = []
    for key, value in options.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if not isinstance(key, str) or "," in key or "=" in key or "," in text or "\0" in text:
            raise ValueError(f"{WHERE}: option {key!r}={text!r} cannot be passed on "
                             "(a key is a name without ',' or '='; a value has no ',')")
        parts.append(f"{key}={text}")
    return ",".join(parts)


def forward_convention(forward, eps):
    """(name, eps) of the forward the layer runs and differentiates (docs/math.md, "Forward
    conventions"); refuses an unknown name or an eps that is not a finite number >= 0."""
    if not isinstance(forward, str) or forward not in FORWARDS:
        raise ValueError(f"{WHERE}: forward={forward!r} is not a forward convention (use "
                         f"{', '.join(FORWARDS)})")
    if eps is None:  # NaN: the binding takes the convention's own from the library's one table
        return forward, math.nan
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"{WHERE}: eps must be a number or None, got {type(eps).__name__}")
    try:  # an int or Fraction beyond a double's range overflows here, not in the check
        value = float(eps)
    except OverflowError:
        value = math.inf
    # At most float32's largest, as the library takes it (a float32 forward converts eps).
    if not math.isfinite(value) or value < 0 or value > torch.finfo(torch.float32).max:
        raise ValueError(f"{WHERE}: eps must be finite and >= 0, got {reprlib.repr(eps)} (at most "
                         f"float32's largest, {torch.finfo(torch.float32).max:.6g})")
    return forward, value


def _constant_result(function):
    """torch.compile calls the decorated function while tracing and keeps its result, instead
    of tracing into the ctypes calls behind it."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "assume_constant_result"):
        return compiler.assume_constant_result(function)
    return function


_checked = set()


@_constant_result
def check_solver(backward, options, device_type, dtype_name):
    """Raises ValueError unless the solver exists, takes these options and runs on this device
    in this dtype; each combination is checked once. An unknown name is answered with the
    registered ones (plugins included), anything else with the library's reason."""
    key = (backward, options, device_type, dtype_name)
    if key not in _checked:
        try:
            library()
        except SinkgradError as error:  # the library, not an argument: no ValueError
            raise SinkgradError(f"{WHERE}: {error}") from None
        try:
            _kernels.check_solver(backward, options, device_type, getattr(torch, dtype_name))
        except SinkgradError as error:
            try:
                known = library().solver_names()
            except SinkgradError:  # e.g. a refused SINKGRAD_PLUGIN_PATH: its reason says it
                known = None
            if known is not None and backward not in known:
                raise ValueError(f"{WHERE}: unknown backward {backward!r}; known: "
                                 f"{', '.join(known)}") from None
            raise ValueError(f"{WHERE}: {error.reason}") from None
        _checked.add(key)
    return True
