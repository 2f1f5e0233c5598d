"""The library calls of the PyTorch layer on flat batches: (B, n, n) contiguous float32 or
float64 tensors, on the cpu or one CUDA device. On CUDA every call is launched on PyTorch's
current stream and returns without waiting (stream-ordered C ABI); its outputs come from
PyTorch's allocator, so the calls can be captured into a CUDA graph. With torch >= 2.4 these
functions are also registered as torch.library custom ops (sinkgrad/_ops.py). A library error
while they run (a CUDA error, say) is a SinkgradError in the layer's terms, without the C
function's name."""
import torch

from sinkgrad._capi import (CPU, CUDA, DEFAULT_CONVENTION, STATUS_NAMES, SUCCESS_CODES,
                            SinkgradError, library)


def _in_python_terms(error):
    return SinkgradError(f"sinkgrad.torch.sinkhorn: {error.reason}")


def _dtype_code(tensor):
    return 4 if tensor.dtype == torch.float32 else 8


# The current device and the raw handle of its current stream, straight from torch's C side
# where it has them: torch.cuda.current_device() and current_stream() add a Python call, an
# initialisation check and a Stream object to every library call (the tensor is on CUDA, so
# torch has initialised CUDA already).
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_raw_stream = (getattr(torch._C, "_cuda_getCurrentRawStream", None) or
               (lambda index: torch.cuda.current_stream(index).cuda_stream))


def _on_device(tensor, call):
    """call(stream) with the tensor's device current (the library launches on the current
    device) and PyTorch's current stream of that device; the device switch is skipped when it
    is current already (it costs host time on every call)."""
    index = tensor.get_device()
    if index == _current_device():
        return call(_raw_stream(index))
    with torch.cuda.device(index):
        return call(_raw_stream(index))


def forward(logits, iterations, convention=DEFAULT_CONVENTION):
    """R of the library's forward of `convention`, (name, eps): columns_first (exp(logits),
    columns then rows, T times) or another of _arguments.FORWARDS."""
    R = torch.empty_like(logits)
    batch, n = logits.shape[0], logits.shape[-1]
    lib = library()
    try:
        if logits.is_cuda:
            _on_device(logits, lambda stream: lib.forward_async(
                _dtype_code(logits), batch, n, iterations, logits.data_ptr(), R.data_ptr(),
                stream, convention))
        else:
            lib.forward(CPU, _dtype_code(logits), batch, n, iterations, logits.data_ptr(),
                        R.data_ptr(), convention)
    except SinkgradError as error:
        raise _in_python_terms(error) from None
    return R


DIAGNOSTICS = ("row_violation", "column_violation", "relative_residual", "zero_entries")
_NO_DIAGNOSTICS = (None, None, None, None)


def solve(logits, R, grad_output, iterations, solver, options, convention=DEFAULT_CONVENTION,
          diagnostics=None):
    """(dL/dM, status, iterations) of one solver for R made by the forward of `convention`;
    status and iterations are int32 (B,). diagnostics: a dict that receives the per-matrix
    diagnostics (DIAGNOSTICS: R's dtype, zero_entries int32, each (B,)), or None."""
    return _backward(logits, R, grad_output, iterations, solver, options, convention,
                     diagnostics, 0)


def _backward(logits, R, grad_output, iterations, solver, options, convention, diagnostics,
              replace):
    """One library call (sinkgrad_backward): the solve and, when replace is 1, the exact
    fallback for the matrices it failed."""
    batch, n = R.shape[0], R.shape[-1]
    device = R.device
    grad = torch.empty_like(R)
    # Two tensors, not views of one: a custom op's outputs may not alias each other.
    status = torch.empty(batch, dtype=torch.int32, device=device)
    steps = torch.empty(batch, dtype=torch.int32, device=device)
    lib = library()
    wanted = _NO_DIAGNOSTICS
    if diagnostics is not None:
        for name in DIAGNOSTICS:
            dtype = torch.int32 if name == "zero_entries" else R.dtype
            diagnostics[name] = torch.empty(batch, dtype=dtype, device=device)
        wanted = tuple(diagnostics[name].data_ptr() for name in DIAGNOSTICS)
    pointers = (logits.data_ptr(), R.data_ptr(), grad_output.data_ptr(), grad.data_ptr(),
                status.data_ptr(), steps.data_ptr())
    try:
        if R.is_cuda:
            _on_device(R, lambda stream: lib.backward_async(
                solver, options, _dtype_code(R), batch, n, iterations, *pointers, wanted,
                replace, stream, convention))
        else:
            lib.backward(solver, options, CPU, _dtype_code(R), batch, n, iterations, *pointers,
                         wanted, replace, convention)
    except SinkgradError as error:
        raise _in_python_terms(error) from None
    return grad, status, steps


class SolveFailure(SinkgradError):
    """Raised by a backward with on_failure="raise" when some matrices failed."""


def failed(status):
    """A bool tensor, True where the status is not a success (ok or fallback)."""
    return (status != SUCCESS_CODES[0]) & (status != SUCCESS_CODES[1])


def failure_message(solver, status):
    """One line naming how many matrices failed and with which status (one host sync)."""
    counts = torch.bincount(status.long().flatten(), minlength=len(STATUS_NAMES)).tolist()
    codes = [code for code in range(len(STATUS_NAMES)) if code not in SUCCESS_CODES]
    reasons = ", ".join(f"{counts[code]} {STATUS_NAMES[code]}" for code in codes if counts[code])
    return (f"sinkhorn backward '{solver}': {sum(counts[code] for code in codes)} of "
            f"{status.numel()} matrices failed ({reasons})")


def backward(logits, R, grad_output, iterations, solver, options, on_failure,
             convention=DEFAULT_CONVENTION, diagnostics=None):
    """solve() and then the on_failure policy: "keep" leaves failed matrices as the solver wrote
    them; "unrolled" recomputes them with the unrolled solver, those matrices only, in the same
    library call (on CUDA counted on the device, so that nothing waits for the GPU); "raise"
    waits for the statuses and raises SolveFailure when any is not a success. status and
    iterations stay the first solver's, so that they say which matrices were recomputed."""
    replace = 1 if on_failure == "unrolled" and solver != "unrolled" else 0
    grad, status, steps = _backward(logits, R, grad_output, iterations, solver, options,
                                    convention, diagnostics, replace)
    if on_failure == "raise" and bool(failed(status).any()):
        raise SolveFailure(failure_message(solver, status))
    return grad, status, steps


def check_solver(solver, options, device_type, dtype):
    """Creates the solver (kept by the library) and checks device and precision: raises
    SinkgradError with the registry's message for a bad name, option, device or precision."""
    lib = library()
    device = CUDA if device_type == "cuda" else CPU
    if device == CUDA and not lib.has_cuda:
        raise SinkgradError(f"{lib.path} was built without CUDA; rebuild sinkgrad with nvcc "
                            "to run the layer on CUDA tensors")
    lib.check_solver(solver, options, device, 4 if dtype == torch.float32 else 8)
