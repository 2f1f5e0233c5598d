"""The ctypes binding of libsinkgrad_c (include/sinkgrad/sinkgrad_c.h), the one every Python
caller uses (the PyTorch layer, the comparisons, the tests), found through $SINKGRAD_C_LIB, inside
the package (lib/, where `pip install` puts it), through the path the build or `cmake --install`
wrote into _location.py, or given:

    lib = Library("build/lib/libsinkgrad_c.so")       # or library(): the process's one
    R = lib.forward_numpy(M, 20)                       # numpy (B, n, n) arrays on the cpu
    grad, status, iterations = lib.solve_numpy("cg_corrected", "", None, R, G, 20)

Pointers are integers (a tensor's data_ptr(), a stream's cuda_stream, an array's ctypes.data);
dtype is the element size, 4 (float32) or 8 (float64). A convention is (name, eps), eps None
(or NaN) for the convention's own (the library's table, default_eps). Every integer is checked in
the C type it is passed as (ctypes would wrap 2**32 + 1 to 1 without a word). A failed call raises
SinkgradError with the library's message.
"""
import ctypes
import numbers
import os
import stat
import struct
import sys
import threading

CPU, CUDA = 0, 1
FLOAT32, FLOAT64 = 4, 8
DEFAULT_CONVENTION = ("columns_first", None)
STATUS_NAMES = ("ok", "not_converged", "breakdown", "invalid_input", "ill_conditioned",
                "fallback")
# The statuses whose gradient is the one asked for: ok, and fallback (the exact unrolled
# gradient in place of a failed implicit one).
SUCCESS_CODES = (0, 5)
INT_RANGE, INT64_RANGE = (-2**31, 2**31 - 1), (-2**63, 2**63 - 1)  # the C ABI's int, int64_t
LIBRARY_NAME = "libsinkgrad_c.so"


class SinkgradError(RuntimeError):
    """An error reported by libsinkgrad. str(): "function: reason" as the library wrote it;
    .function the C function, .reason the rest (what the Python layers show their callers)."""

    def __init__(self, message):
        super().__init__(message)
        function, separator, reason = message.partition(": ")
        is_c_name = separator and function.startswith("sinkgrad_") and " " not in function
        self.function, self.reason = (function, reason) if is_c_name else (None, message)


def checked_int(name, value, low, high):
    """value as an int of [low, high] (TypeError for a non-integer or a bool, ValueError naming
    the true value otherwise)."""
    if type(value) is int and low <= value <= high:  # every call of the layer: kept cheap
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, got {int(value)}")
    return int(value)


def _ints(device, dtype, batch, n, T):
    """The integers of a call checked to fit their C types (int, int, int64_t, int, int); the
    library checks their values (a known device and dtype, batch >= 0, n >= 1, T >= 1) with its
    own messages."""
    low, high = INT_RANGE
    if (type(device) is int and type(dtype) is int and type(batch) is int and type(n) is int and
            type(T) is int and low <= device <= high and low <= dtype <= high and
            low <= n <= high and low <= T <= high and
            INT64_RANGE[0] <= batch <= INT64_RANGE[1]):  # every call of the layer: one test
        return device, dtype, batch, n, T
    return (checked_int("device (an int of the C ABI)", device, *INT_RANGE),
            checked_int("dtype (an int of the C ABI)", dtype, *INT_RANGE),
            checked_int("batch (an int64_t of the C ABI)", batch, *INT64_RANGE),
            checked_int("n (an int of the C ABI)", n, *INT_RANGE),
            checked_int("T (an int of the C ABI)", T, *INT_RANGE))


def packaged_library():
    """The libsinkgrad_c inside this package (lib/, as `pip install` lays it out), or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", LIBRARY_NAME)
    return path if os.path.exists(path) else None


def library_path():
    """$SINKGRAD_C_LIB (the user's explicit choice), else the library inside the package (a pip
    install), else the libsinkgrad_c that this copy of the package was built with, else (the
    package in a source checkout, python/sinkgrad) that checkout's build/lib."""
    if os.environ.get("SINKGRAD_C_LIB"):
        return os.environ["SINKGRAD_C_LIB"]
    if packaged_library() is not None:
        return packaged_library()
    try:
        from sinkgrad._location import LIBRARY
    except ImportError:
        checkout = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                                "lib", LIBRARY_NAME)
        if os.path.exists(checkout):
            return os.path.normpath(checkout)
        raise SinkgradError(
            "this copy of the sinkgrad package was not built: import it from the build tree "
            "(PYTHONPATH=build/python) or an installation, or set SINKGRAD_C_LIB") from None
    return LIBRARY


# The ELF64 little-endian header and program header as <elf.h> lays them out (Elf64_Ehdr from
# e_type on, Elf64_Phdr), the only layout checked: the one of the machines sinkgrad builds for.
_ELF_MAGIC, _EHDR_SIZE, _PHDR_SIZE, _ET_DYN = b"\x7fELF", 64, 56, 3
_EHDR_REST, _PHDR = struct.Struct("<HHIQQQIHHHHHH"), struct.Struct("<IIQQQQQQ")


def check_library_file(path):
    """Refuses (SinkgradError naming the path) a file that dlopen cannot load safely: not a
    regular file (a FIFO blocks dlopen forever), not an ELF shared library, or one whose headers
    describe bytes beyond its end. dlopen maps the segments its headers describe, and touching a
    page past the end of a copy cut short kills the process with SIGBUS, beyond any except
    clause; the C++ plugin loader checks plugins the same way (core/plugin_file_check.cpp). A
    name without a directory is left to dlopen's search, and a file that cannot be read, to its
    message."""
    path = os.fsdecode(path)
    if os.sep not in path:
        return
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return
    refused = f"cannot load libsinkgrad_c from {path}: "
    if not stat.S_ISREG(info.st_mode):
        raise SinkgradError(refused + "it is not a regular file (a directory, device, FIFO or "
                            "socket)")
    if (not sys.platform.startswith("linux") or sys.byteorder != "little" or
            struct.calcsize("P") != 8):
        return
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            header = file.read(_EHDR_SIZE)
            if not header.startswith(_ELF_MAGIC):
                raise SinkgradError(refused + "it is not a shared library (no ELF header)")
            if len(header) < _EHDR_SIZE:
                raise SinkgradError(refused + f"it is cut short or damaged: {size} bytes, "
                                    f"fewer than an ELF header's {_EHDR_SIZE}")
            if header[4] != 2 or header[5] != 1:  # EI_CLASS ELFCLASS64, EI_DATA ELFDATA2LSB
                raise SinkgradError(refused + "it is an ELF file of another word size or byte "
                                    "order than this machine's")
            (e_type, _, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum, e_shentsize,
             e_shnum, _) = _EHDR_REST.unpack_from(header, 16)
            if e_type != _ET_DYN:
                raise SinkgradError(refused + f"it is an ELF file but not a shared library "
                                    f"(e_type {e_type})")
            cut = "it is cut short or damaged: its ELF header describes "
            beyond = f", beyond its {size} bytes"
            if e_phentsize != _PHDR_SIZE or e_phoff + e_phnum * _PHDR_SIZE > size:
                raise SinkgradError(refused + cut + "program headers" + beyond)
            if e_shoff != 0 and e_shoff + e_shnum * e_shentsize > size:
                raise SinkgradError(refused + cut + "section headers up to byte "
                                    f"{e_shoff + e_shnum * e_shentsize}" + beyond)
            file.seek(e_phoff)
            table = file.read(e_phnum * _PHDR_SIZE)
    except OSError:
        return
    if len(table) != e_phnum * _PHDR_SIZE:  # the file shrank since fstat
        raise SinkgradError(refused + cut + "program headers it does not hold")
    for index in range(e_phnum):
        _, _, p_offset, _, _, p_filesz, _, _ = _PHDR.unpack_from(table, index * _PHDR_SIZE)
        if p_offset + p_filesz > size:
            raise SinkgradError(refused + cut + f"a segment up to byte {p_offset + p_filesz}" +
                                beyond)


class Library:
    def __init__(self, path=None):
        path = path or library_path()
        self.path = path
        self._default_eps = {}  # convention -> the library's eps, read once (every call uses it)
        check_library_file(path)
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as error:
            raise SinkgradError(f"cannot load libsinkgrad_c from {path}: {error}") from None
        p, i32, i64, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_char_p
        d = ctypes.c_double
        signatures = {
            "sinkgrad_last_error": (s, []),
            "sinkgrad_forward_convention": (i32, [i32, i32, i64, i32, i32, s, d, p, p]),
            "sinkgrad_solve_convention": (i32, [s, s, i32, i32, i64, i32, i32, s, d, p, p, p,
                                                p, p, p]),
            "sinkgrad_forward_convention_async": (i32, [i32, i64, i32, i32, s, d, p, p, p]),
            "sinkgrad_solve_convention_async": (i32, [s, s, i32, i64, i32, i32, s, d, p, p, p,
                                                      p, p, p, p]),
            "sinkgrad_backward": (i32, [s, s, i32, i32, i64, i32, i32, s, d, p, p, p, p, p, p,
                                        p, p, p, p, i32]),
            "sinkgrad_backward_async": (i32, [s, s, i32, i64, i32, i32, s, d, p, p, p, p, p, p,
                                              p, p, p, p, i32, p]),
            "sinkgrad_check_solver": (i32, [s, s, i32, i32]),
            "sinkgrad_load_plugin": (i32, [s]),
            "sinkgrad_solver_names": (i32, [ctypes.POINTER(s)]),
            "sinkgrad_has_cuda": (i32, []),
            "sinkgrad_default_eps": (i32, [s, ctypes.POINTER(d)]),
        }
        # Every function bound is checked here: a library without one would otherwise be a raw
        # AttributeError, or a wrong call, on its first use.
        missing = [name for name in signatures if not hasattr(self._lib, name)]
        if len(missing) == len(signatures):
            raise SinkgradError(f"{path} is not a libsinkgrad_c (it has none of its functions, "
                                "e.g. sinkgrad_forward_convention); point SINKGRAD_C_LIB at the "
                                f"{LIBRARY_NAME} of a sinkgrad build or unset it")
        if missing:
            raise SinkgradError(f"{path} is an older libsinkgrad_c than this package (no "
                                f"{', '.join(missing)}); rebuild it or unset SINKGRAD_C_LIB")
        for name, (restype, argtypes) in signatures.items():
            function = getattr(self._lib, name)
            function.restype, function.argtypes = restype, argtypes

    def _check(self, code):
        if code != 0:
            raise SinkgradError(self._lib.sinkgrad_last_error().decode())

    def _spec(self, convention):
        """(name, eps), eps None or NaN replaced by the convention's own (the PyTorch layer passes
        NaN for eps=None through its float-typed ops)."""
        name, eps = convention
        if eps is None or eps != eps:
            eps = self.default_eps(name)
        return name, eps

    def last_error(self):
        return self._lib.sinkgrad_last_error().decode()

    def default_eps(self, convention):
        """The eps a convention adds when none is given (docs/math.md, "Forward conventions")."""
        if not isinstance(convention, str):
            raise TypeError(f"a forward convention name must be a str, got "
                            f"{type(convention).__name__} {convention!r}")
        if convention not in self._default_eps:
            if "\0" in convention:  # ctypes would pass the text before it
                raise ValueError(f"a forward convention name cannot contain NUL characters: "
                                 f"{convention!r}")
            eps = ctypes.c_double()
            self._check(self._lib.sinkgrad_default_eps(convention.encode(), ctypes.byref(eps)))
            self._default_eps[convention] = eps.value
        return self._default_eps[convention]

    @property
    def has_cuda(self):
        return bool(self._lib.sinkgrad_has_cuda())

    # convention: (name, eps) as the C ABI's *_convention functions take them (docs/math.md,
    # "Forward conventions"); the default is the seeds' columns_first without eps.
    def forward(self, device, dtype, batch, n, T, logits, R, convention=DEFAULT_CONVENTION):
        name, eps = self._spec(convention)
        device, dtype, batch, n, T = _ints(device, dtype, batch, n, T)
        self._check(self._lib.sinkgrad_forward_convention(device, dtype, batch, n, T,
                                                          name.encode(), eps, logits, R))

    def forward_async(self, dtype, batch, n, T, logits, R, stream,
                      convention=DEFAULT_CONVENTION):
        name, eps = self._spec(convention)
        _, dtype, batch, n, T = _ints(0, dtype, batch, n, T)
        self._check(self._lib.sinkgrad_forward_convention_async(dtype, batch, n, T, name.encode(),
                                                                eps, logits, R, stream))

    def solve(self, solver, options, device, dtype, batch, n, T, logits, R, G, grad, status,
              iterations, convention=DEFAULT_CONVENTION):
        name, eps = self._spec(convention)
        device, dtype, batch, n, T = _ints(device, dtype, batch, n, T)
        self._check(self._lib.sinkgrad_solve_convention(
            solver.encode(), options.encode(), device, dtype, batch, n, T, name.encode(), eps,
            logits, R, G, grad, status, iterations))

    def solve_async(self, solver, options, dtype, batch, n, T, logits, R, G, grad, status,
                    iterations, stream, convention=DEFAULT_CONVENTION):
        name, eps = self._spec(convention)
        _, dtype, batch, n, T = _ints(0, dtype, batch, n, T)
        self._check(self._lib.sinkgrad_solve_convention_async(
            solver.encode(), options.encode(), dtype, batch, n, T, name.encode(), eps, logits, R,
            G, grad, status, iterations, stream))

    # The layer's backward in one call (sinkgrad_backward): the solve, diagnostics the four
    # pointers (row_violation, column_violation, relative_residual, zero_entries; any None), and,
    # when replace is 1, the exact fallback for the failed matrices on the same arrays.
    def backward(self, solver, options, device, dtype, batch, n, T, logits, R, G, grad, status,
                 iterations, diagnostics, replace, convention=DEFAULT_CONVENTION):
        name, eps = self._spec(convention)
        device, dtype, batch, n, T = _ints(device, dtype, batch, n, T)
        self._check(self._lib.sinkgrad_backward(
            solver.encode(), options.encode(), device, dtype, batch, n, T, name.encode(), eps,
            logits, R, G, grad, status, iterations, *diagnostics, replace))

    def backward_async(self, solver, options, dtype, batch, n, T, logits, R, G, grad, status,
                       iterations, diagnostics, replace, stream, convention=DEFAULT_CONVENTION):
        name, eps = self._spec(convention)
        _, dtype, batch, n, T = _ints(0, dtype, batch, n, T)
        self._check(self._lib.sinkgrad_backward_async(
            solver.encode(), options.encode(), dtype, batch, n, T, name.encode(), eps, logits, R,
            G, grad, status, iterations, *diagnostics, replace, stream))

    def check_solver(self, solver, options, device, dtype):
        device, dtype, _, _, _ = _ints(device, dtype, 0, 0, 0)
        self._check(self._lib.sinkgrad_check_solver(solver.encode(), options.encode(), device,
                                                    dtype))

    def load_plugin(self, path):
        """path: a str or os.PathLike (bytes too) without NUL characters."""
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"a plugin path must be a str or os.PathLike, got "
                            f"{type(path).__name__}")
        encoded = os.fsencode(path)
        if b"\0" in encoded:
            raise ValueError(f"a plugin path cannot contain NUL characters: {path!r}")
        self._check(self._lib.sinkgrad_load_plugin(encoded))

    def solver_names(self):
        """The registered solvers, sorted: built-ins, SINKGRAD_PLUGIN_PATH's, loaded plugins'."""
        names = ctypes.c_char_p()
        self._check(self._lib.sinkgrad_solver_names(ctypes.byref(names)))
        return tuple(names.value.decode().split(","))

    # numpy arrays on the cpu: shapes (B, n, n), float32 or float64, C-contiguous.
    def forward_numpy(self, M, T, convention=DEFAULT_CONVENTION):
        import numpy as np
        M = np.ascontiguousarray(M)
        R = np.empty_like(M)
        self.forward(CPU, M.itemsize, M.shape[0], M.shape[1], T, M.ctypes.data, R.ctypes.data,
                     convention)
        return R

    def solve_numpy(self, solver, options, M, R, G, T, convention=DEFAULT_CONVENTION):
        """(dL/dM, status, iterations); M may be None for solvers that do not replay."""
        import numpy as np
        R, G = np.ascontiguousarray(R), np.ascontiguousarray(G)
        M = None if M is None else np.ascontiguousarray(M, dtype=R.dtype)
        grad = np.empty_like(R)
        status = np.empty(R.shape[0], dtype=np.int32)
        iterations = np.empty(R.shape[0], dtype=np.int32)
        self.solve(solver, options or "", CPU, R.itemsize, R.shape[0], R.shape[1], T,
                   None if M is None else M.ctypes.data, R.ctypes.data, G.ctypes.data,
                   grad.ctypes.data, status.ctypes.data, iterations.ctypes.data, convention)
        return grad, status, iterations


_library = None
_lock = threading.Lock()


def library():
    """The process's one Library (loaded on first use)."""
    global _library
    if _library is not None:  # every library call asks: no lock once loaded
        return _library
    with _lock:
        if _library is None:
            _library = Library(library_path())
        return _library


def default_eps(convention):
    """The eps the library adds for `convention` when none is given."""
    return library().default_eps(convention)


def load_plugin(path):
    """Loads a solver plugin into the registry every later solve uses (docs/adding-a-solver.md);
    loading the same file twice is harmless. path: a str or os.PathLike (TypeError otherwise,
    ValueError with a NUL inside). Raises SinkgradError naming why the plugin was refused."""
    try:
        library().load_plugin(path)
    except TypeError as error:
        raise TypeError(f"sinkgrad.load_plugin: {error}") from None
    except ValueError as error:
        raise ValueError(f"sinkgrad.load_plugin: {error}") from None
    except SinkgradError as error:
        raise SinkgradError(f"sinkgrad.load_plugin: {error.reason}") from None
