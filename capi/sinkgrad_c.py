"""ctypes binding of libsinkgrad_c (include/sinkgrad/sinkgrad_c.h).

    lib = SinkgradC("build/lib/libsinkgrad_c.so")   # default: see default_library_path()
    lib.forward(device, dtype, B, n, T, logits_ptr, R_ptr)
    lib.solve("cg_corrected", "", device, dtype, B, n, T, M_ptr, R_ptr, G_ptr, grad_ptr,
              status_ptr, iterations_ptr)

Pointers are integers: numpy's `a.ctypes.data` on the cpu (device 0), torch's `t.data_ptr()` of
CUDA tensors on cuda (device 1; status and iterations int32 device tensors too). dtype is the
element size: 4 (float32) or 8 (float64). A failed call raises SinkgradError with the
library's message. The numpy helpers at the end run on the cpu.
"""
import ctypes
import os

CPU, CUDA = 0, 1
FLOAT32, FLOAT64 = 4, 8
STATUS_NAMES = ("ok", "not_converged", "breakdown", "invalid_input", "ill_conditioned")


class SinkgradError(RuntimeError):
    pass


def default_library_path():
    """$SINKGRAD_C_LIB; else, installed (share/sinkgrad/python), the library `cmake --install`
    put beside it (sinkgrad_c_library.txt holds its path relative to this folder); else
    build/lib/libsinkgrad_c.so of this checkout."""
    if os.environ.get("SINKGRAD_C_LIB"):
        return os.environ["SINKGRAD_C_LIB"]
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "sinkgrad_c_library.txt")
    if os.path.exists(installed):
        with open(installed) as f:
            return os.path.normpath(os.path.join(here, f.read().strip()))
    root = os.path.dirname(os.path.dirname(here))
    return os.path.join(root, "build", "lib", "libsinkgrad_c.so")


def default_eps(convention, eps):
    """The convention's own eps when none is given (FORWARDS.md: 1e-6 for TileKernels)."""
    if eps is not None:
        return float(eps)
    return 1e-6 if convention == "tilekernels" else 0.0


class SinkgradC:
    def __init__(self, path=None):
        self.path = path or default_library_path()
        self._lib = ctypes.CDLL(self.path)
        p, i32, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
        self._lib.sinkgrad_last_error.restype = ctypes.c_char_p
        self._lib.sinkgrad_last_error.argtypes = []
        self._lib.sinkgrad_forward.restype = i32
        self._lib.sinkgrad_forward.argtypes = [i32, i32, i64, i32, i32, p, p]
        self._lib.sinkgrad_solve.restype = i32
        self._lib.sinkgrad_solve.argtypes = [ctypes.c_char_p, ctypes.c_char_p, i32, i32, i64,
                                             i32, i32, p, p, p, p, p, p]
        d, s = ctypes.c_double, ctypes.c_char_p
        self._lib.sinkgrad_forward_convention.restype = i32
        self._lib.sinkgrad_forward_convention.argtypes = [i32, i32, i64, i32, i32, s, d, p, p]
        self._lib.sinkgrad_solve_convention.restype = i32
        self._lib.sinkgrad_solve_convention.argtypes = [s, s, i32, i32, i64, i32, i32, s, d, p,
                                                        p, p, p, p, p]

    def last_error(self):
        return self._lib.sinkgrad_last_error().decode()

    def _check(self, code):
        if code != 0:
            raise SinkgradError(self.last_error())

    def forward(self, device, dtype, batch, n, T, logits, R, convention="columns_first",
                eps=None):
        self._check(self._lib.sinkgrad_forward_convention(
            device, dtype, batch, n, T, convention.encode(), default_eps(convention, eps), logits,
            R))

    def solve(self, solver, options, device, dtype, batch, n, T, logits, R, G, grad, status,
              iterations, convention="columns_first", eps=None):
        self._check(self._lib.sinkgrad_solve_convention(
            solver.encode(), (options or "").encode(), device, dtype, batch, n, T,
            convention.encode(), default_eps(convention, eps), logits, R, G, grad, status,
            iterations))

    # numpy arrays on the cpu: shapes (B, n, n), float32 or float64, C-contiguous.
    def forward_numpy(self, M, T, convention="columns_first", eps=None):
        import numpy as np
        M = np.ascontiguousarray(M)
        R = np.empty_like(M)
        self.forward(CPU, M.itemsize, M.shape[0], M.shape[1], T, M.ctypes.data, R.ctypes.data,
                     convention, eps)
        return R

    def solve_numpy(self, solver, options, M, R, G, T, convention="columns_first", eps=None):
        """(dL/dM, status, iterations); M may be None for solvers that do not replay."""
        import numpy as np
        R, G = np.ascontiguousarray(R), np.ascontiguousarray(G)
        M = None if M is None else np.ascontiguousarray(M, dtype=R.dtype)
        grad = np.empty_like(R)
        status = np.empty(R.shape[0], dtype=np.int32)
        iterations = np.empty(R.shape[0], dtype=np.int32)
        self.solve(solver, options, CPU, R.itemsize, R.shape[0], R.shape[1], T,
                   None if M is None else M.ctypes.data, R.ctypes.data, G.ctypes.data,
                   grad.ctypes.data, status.ctypes.data, iterations.ctypes.data, convention, eps)
        return grad, status, iterations
