"""The cpu self-test of compare_with_seeds.py (--selftest): the ctypes plumbing of
libsinkgrad_c checked on small float64 / float32 batches against a numpy mirror of the forward
and of the corrected system. Needs numpy only."""
from sinkgrad import _capi


def numpy_forward(M, T):
    import numpy as np
    R = np.exp(M)
    for _ in range(T):
        R = R / R.sum(-2, keepdims=True)
        R = R / R.sum(-1, keepdims=True)
    return R


def numpy_corrected_gradient(R, G):
    """The gauge-fixed corrected system, as torch_linalg_solve below writes it, in numpy."""
    import numpy as np
    n = R.shape[-1]
    r, c = R.sum(-1), R.sum(-2)
    RG = R * G
    s_r, s_c = RG.sum(-1), RG.sum(-2)
    Rs = R / r[..., None]
    S = np.eye(n) * c[..., None, :] - np.swapaxes(R, -1, -2) @ Rs + 1.0 / n
    b = s_c - (np.swapaxes(R, -1, -2) @ (s_r / r)[..., None])[..., 0]
    beta = np.linalg.solve(S, b[..., None])[..., 0]
    alpha = (s_r - (R @ beta[..., None])[..., 0]) / r
    return R * (G - alpha[..., :, None] - beta[..., None, :])


def selftest(lib, solvers):
    """Each sinkgrad row of the comparison (solvers: (name, solver, options, needs_M)) on the
    cpu against the numpy mirror above; 0 when every check passes."""
    import numpy as np
    rng = np.random.default_rng(0)
    B, n, T = 64, 6, 5
    M = rng.random((B, n, n)) * 4.0
    G = rng.standard_normal((B, n, n))
    checks = []

    def check(name, ok, detail=""):
        checks.append(ok)
        print(f"selftest: {'ok  ' if ok else 'FAIL'} {name} {detail}", flush=True)

    def rel(a, b):
        return float((np.linalg.norm(a - b, axis=(1, 2)) / np.linalg.norm(b, axis=(1, 2))).max())

    R64 = numpy_forward(M, T)
    e = rel(lib.forward_numpy(M, T), R64)
    check("forward float64 vs numpy", e < 1e-13, f"max rel {e:.1e}")
    e = rel(lib.forward_numpy(M.astype(np.float32), T).astype(np.float64), R64)
    check("forward float32 vs numpy", e < 1e-5, f"max rel {e:.1e}")
    ref = numpy_corrected_gradient(R64, G)
    for name, solver, options, _ in solvers:
        grad, status, _ = lib.solve_numpy(solver, options, M, R64, G, T)
        if solver in ("cg_corrected", "direct"):  # the system the numpy mirror solves
            e = rel(grad, ref)
            check(f"{name} float64 vs numpy corrected solve", e < 1e-9 and (status == 0).all(),
                  f"max rel {e:.1e}, not ok {(status != 0).sum()}")
        else:
            check(f"{name} float64 runs", bool(np.isfinite(grad).all() and (status == 0).all()))
    grad, status, _ = lib.solve_numpy("cg_corrected", "", None, R64.astype(np.float32),
                                      G.astype(np.float32), T)
    e = rel(grad.astype(np.float64), ref)
    check("sinkgrad cg_corrected float32", e < 1e-3 and grad.dtype == np.float32,
          f"max rel {e:.1e}")
    try:
        lib.solve_numpy("no_such_solver", "", None, R64, G, T)
        check("unknown solver is an error", False)
    except _capi.SinkgradError as error:
        check("unknown solver is an error naming the solvers",
              "cg_corrected" in str(error) and "unrolled" in str(error), f"({error})")
    failed = checks.count(False)
    print(f"selftest: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0
