"""Independent references for the layer's tests, in plain torch (float64): the columns-first
Sinkhorn forward written out step by step (its torch.autograd gradient is the unrolled
reference), and the implicit gradients straight from the formulas of docs/math.md, solved by
dense linear algebra."""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sinkhorn_torch(M, T):
    """T times: normalise the columns, then the rows, of exp(M)."""
    X = torch.exp(M)
    for _ in range(T):
        X = X / X.sum(-2, keepdim=True)
        X = X / X.sum(-1, keepdim=True)
    return X


def convention_torch(M, T, forward, eps):
    """The forwards of docs/math.md ("Forward conventions") written out as their formulas, with
    eps in every denominator: rows_first is T times rows then columns of exp(M); tilekernels starts
    from softmax_rows(M) + eps, normalises columns, then T - 1 times rows and columns."""
    def rows(X):
        return X / (X.sum(-1, keepdim=True) + eps)

    def cols(X):
        return X / (X.sum(-2, keepdim=True) + eps)

    if forward == "tilekernels":
        X = cols(torch.softmax(M, dim=-1) + eps)
        for _ in range(T - 1):
            X = cols(rows(X))
        return X
    X = torch.exp(M)
    for _ in range(T):
        X = rows(cols(X)) if forward == "columns_first" else cols(rows(X))
    return X


def unrolled_torch(M, T, G, forward=None, eps=0.0):
    """torch.autograd's gradient of <forward(M), G>: the seeds' forward by default."""
    M = M.detach().clone().requires_grad_(True)
    R = sinkhorn_torch(M, T) if forward is None else convention_torch(M, T, forward, eps)
    (grad,) = torch.autograd.grad((R * G).sum(), M)
    return grad


def _assemble(R, G, alpha, beta):
    return R * (G - alpha[..., :, None] - beta[..., None, :])


def corrected_torch(R, G):
    """S beta = b with S = diag(c) - R^T diag(r)^-1 R (singular, S 1 = 0): the solution with
    1^T beta = 0 solves (S + 1 1^T / n) beta = b."""
    n = R.shape[-1]
    r, c = R.sum(-1), R.sum(-2)
    s_r, s_c = (R * G).sum(-1), (R * G).sum(-2)
    Rt = R.transpose(-1, -2)
    S = torch.diag_embed(c) - Rt @ (R / r[..., :, None]) + 1.0 / n
    b = s_c - (Rt @ (s_r / r)[..., None])[..., 0]
    beta = torch.linalg.solve(S, b)
    alpha = (s_r - (R @ beta[..., None])[..., 0]) / r
    return _assemble(R, G, alpha, beta)


def plain_torch(R, G):
    """(I - R^T R) beta = s_c - R^T s_r by the Moore-Penrose solution (direct system=plain)."""
    n = R.shape[-1]
    s_r, s_c = (R * G).sum(-1), (R * G).sum(-2)
    Rt = R.transpose(-1, -2)
    S = torch.eye(n, dtype=R.dtype) - Rt @ R
    b = s_c - (Rt @ s_r[..., None])[..., 0]
    beta = (torch.linalg.pinv(S, hermitian=True) @ b[..., None])[..., 0]
    alpha = s_r - (R @ beta[..., None])[..., 0]
    return _assemble(R, G, alpha, beta)


def relative(a, b):
    """Largest per-matrix relative Frobenius difference."""
    a, b = a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:])
    return float((torch.linalg.norm(a - b, dim=(-2, -1)) /
                  torch.linalg.norm(b, dim=(-2, -1))).max())


def inputs(B, n, seed, scale=4.0, dtype=torch.float64):
    """Logits uniform(0, scale) (the seeds' benchmark) and a standard normal G."""
    generator = torch.Generator().manual_seed(seed)
    M = torch.rand(B, n, n, generator=generator, dtype=torch.float64) * scale
    G = torch.randn(B, n, n, generator=generator, dtype=torch.float64)
    return M.to(dtype), G.to(dtype)


def import_layer():
    """sinkgrad.torch from the build tree (PYTHONPATH=build/python, as ctest sets it), or from
    the installation under $SINKGRAD_TEST_PACKAGE_PREFIX when that is set (the pip install test),
    which it asserts."""
    try:
        import sinkgrad.torch as sgt
    except ImportError as error:
        sys.exit(f"cannot import sinkgrad.torch ({error}); run with PYTHONPATH=build/python")
    prefix = os.environ.get("SINKGRAD_TEST_PACKAGE_PREFIX")
    if prefix:
        from sinkgrad._capi import library
        for path in (sgt.__file__, library().path):
            if not os.path.realpath(path).startswith(os.path.realpath(prefix) + os.sep):
                sys.exit(f"{path} is not inside {prefix}: the tests would not test the install")
    return sgt


def backward_with_stats(sgt, M, T, G, **kwargs):
    """logits.grad and the SolveStats of sgt.sinkhorn(M, T, **kwargs) backpropagating G."""
    M = M.detach().clone().requires_grad_(True)
    stats = sgt.SolveStats()
    sgt.sinkhorn(M, T, stats=stats, **kwargs).backward(G)
    return M.grad, stats
