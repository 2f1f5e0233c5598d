"""ctypes binding of libsinkgrad_c (experiments/capi/sinkgrad_c.h).

    lib = SinkgradC("build/lib/libsinkgrad_c.so")   # or SINKGRAD_C_LIB, or build/lib by default
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
    """$SINKGRAD_C_LIB, else build/lib/libsinkgrad_c.so of this checkout."""
    if os.environ.get("SINKGRAD_C_LIB"):
        return os.environ["SINKGRAD_C_LIB"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "build", "lib", "libsinkgrad_c.so")


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

    def last_error(self):
        return self._lib.sinkgrad_last_error().decode()

    def _check(self, code):
        if code != 0:
            raise SinkgradError(self.last_error())

    def forward(self, device, dtype, batch, n, T, logits, R):
        self._check(self._lib.sinkgrad_forward(device, dtype, batch, n, T, logits, R))

    def solve(self, solver, options, device, dtype, batch, n, T, logits, R, G, grad, status,
              iterations):
        self._check(self._lib.sinkgrad_solve(solver.encode(), (options or "").encode(), device,
                                             dtype, batch, n, T, logits, R, G, grad, status,
                                             iterations))

    # numpy arrays on the cpu: shapes (B, n, n), float32 or float64, C-contiguous.
    def forward_numpy(self, M, T):
        import numpy as np
        M = np.ascontiguousarray(M)
        R = np.empty_like(M)
        self.forward(CPU, M.itemsize, M.shape[0], M.shape[1], T, M.ctypes.data, R.ctypes.data)
        return R

    def solve_numpy(self, solver, options, M, R, G, T):
        """(dL/dM, status, iterations); M may be None for solvers that do not replay."""
        import numpy as np
        R, G = np.ascontiguousarray(R), np.ascontiguousarray(G)
        M = None if M is None else np.ascontiguousarray(M, dtype=R.dtype)
        grad = np.empty_like(R)
        status = np.empty(R.shape[0], dtype=np.int32)
        iterations = np.empty(R.shape[0], dtype=np.int32)
        self.solve(solver, options, CPU, R.itemsize, R.shape[0], R.shape[1], T,
                   None if M is None else M.ctypes.data, R.ctypes.data, G.ctypes.data,
                   grad.ctypes.data, status.ctypes.data, iterations.ctypes.data)
        return grad, status, iterations
