#!/usr/bin/env python3
"""sinkgrad's CUDA solvers beside the seeds' Triton kernels and torch.linalg.solve: the same
tensors, one process, one table.

    python3 experiments/compare_with_seeds.py --lib /tmp/build/lib/libsinkgrad_c.so \\
        --seed-bench .devdeps/seed_kernels_bench.py        # on the GPU machine
    python3 experiments/compare_with_seeds.py --selftest   # any machine: the ctypes plumbing

Inputs as in the seeds' benchmark (shared/reference/seed_kernels_bench.py): M = 4 * rand in
float64, R64 = the T-step forward of M, G64 = randn, and the reference gradient = float64
autograd through the T-step forward (built in chunks of matrices to keep the autograd tape
small); M, R and G are then cast to the row's dtype and every kernel reads the same tensors.

Timing: triton.testing.do_bench (median; it clears the L2 between calls), except that a
candidate whose one probe call takes longer than --slow-ms is reported from that call alone
(marked "1 run"). sinkgrad is called through libsinkgrad_c, whose solve returns only when the
GPU has finished (BackwardSolver::solve synchronises), so its times include one launch and one
synchronisation per call that the asynchronous Triton launches overlap; its outputs are
allocated once, the seeds' (torch.empty_like inside their run functions) on every call.

Columns: GB/s counts 3 arrays of B n^2 elements (R and G read, dL/dM written; unrolled reads M
instead of R; forward: 2, M read and R written); of_copy divides by a 1 GiB device-to-device
torch copy measured in the same run (bytes read + written); vs_s001c is the seed 001 corrected
kernel's time over the row's for the same configuration; relerr is the median over matrices of
||g - ref||_F / ||ref||_F against the float64 reference (forward: R against R64; a non-finite
matrix counts as +inf); not_ok counts matrices whose sinkgrad status is not ok ("-": the kernel
reports none).
"""
import argparse
import gc
import importlib.util
import math
import os
import re
import sys
import time
import traceback

# Next to this file: experiments/capi (source tree) or python/ (share/sinkgrad, installed).
for _folder in ("capi", "python"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), _folder))
import sinkgrad_c  # noqa: E402
from system_python import require_modules  # noqa: E402 (next to this file)

# The seeds' anchor configurations (shared/brief/MATH.md): (B, n, T, dtype).
CONFIGS = [
    (1048576, 4, 20, "float32"),
    (1048576, 8, 20, "float32"),
    (262144, 16, 20, "float32"),
    (1048576, 16, 20, "float32"),
    (1048576, 32, 20, "float32"),
    (65536, 8, 10, "float32"),
    (65536, 8, 10, "float64"),
    (1048576, 4, 20, "float64"),
    (1048576, 8, 20, "float64"),
]

# sinkgrad rows: (row name, solver, options, replays the forward from M).
SINKGRAD_SOLVERS = [
    ("sinkgrad cg_corrected", "cg_corrected", "", False),
    ("sinkgrad cg_plain(schur)", "cg_plain", "system=schur", False),
    ("sinkgrad cg_plain(block)", "cg_plain", "system=block", False),
    ("sinkgrad direct(corrected)", "direct", "system=corrected", False),
    ("sinkgrad unrolled", "unrolled", "", True),
]
BASELINE = "seed001 corrected"
FORWARD = "sinkgrad forward"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", default=None,
                        help="libsinkgrad_c.so (default: $SINKGRAD_C_LIB, else build/lib)")
    parser.add_argument("--seed-bench", default=".devdeps/seed_kernels_bench.py",
                        help="the seeds' benchmark file, imported for its Triton kernels")
    parser.add_argument("--selftest", action="store_true",
                        help="check the ctypes plumbing on the cpu with numpy, then exit")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: a dry run of the whole comparison on CPU tensors without "
                             "the seeds (small batches; times are wall clock, not comparable)")
    parser.add_argument("--batch-divisor", type=int, default=1,
                        help="divide every configuration's B by this (a quicker run)")
    parser.add_argument("--kernels", default=None,
                        help="regular expression: only rows whose kernel name matches")
    parser.add_argument("--slow-ms", type=float, default=1000.0,
                        help="a probe call slower than this is the row's only timing")
    return parser.parse_args()


# ---------------------------------------------------------------- the cpu self-test (numpy)

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


def selftest(lib):
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
    for name, solver, options, _ in SINKGRAD_SOLVERS:
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
    except sinkgrad_c.SinkgradError as error:
        check("unknown solver is an error naming the solvers",
              "cg_corrected" in str(error) and "unrolled" in str(error), f"({error})")
    failed = checks.count(False)
    print(f"selftest: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


# ---------------------------------------------------------------- the comparison (torch)

def torch_forward(M, T):
    R = M.exp()
    for _ in range(T):
        R = R / R.sum(-2, keepdim=True)
        R = R / R.sum(-1, keepdim=True)
    return R


def torch_linalg_solve(torch, R, G):
    """What a user would write: the corrected system, gauge-fixed as the direct solver does,
    (S + 11^T/n) beta = b with S = diag(c) - R^T diag(r)^-1 R, b = s_c - R^T diag(r)^-1 s_r,
    solved by batched torch.linalg.solve; alpha = diag(r)^-1 (s_r - R beta); dL/dM assembled."""
    n = R.shape[-1]
    r, c = R.sum(-1), R.sum(-2)
    RG = R * G
    s_r, s_c = RG.sum(-1), RG.sum(-2)
    Rs = R / r.unsqueeze(-1)
    S = torch.diag_embed(c) - R.mT @ Rs + 1.0 / n
    b = s_c - (R.mT @ (s_r / r).unsqueeze(-1)).squeeze(-1)
    beta = torch.linalg.solve(S, b.unsqueeze(-1)).squeeze(-1)
    alpha = (s_r - (R @ beta.unsqueeze(-1)).squeeze(-1)) / r
    return R * (G - alpha.unsqueeze(-1) - beta.unsqueeze(-2))


def load_seeds(path):
    """The seeds' benchmark as a module (its main() is not run): its Triton kernels and their
    launchers run_s001 / run_s000, used as they are."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no seed benchmark at {path}")
    spec = importlib.util.spec_from_file_location("seed_kernels_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Timer:
    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device == "cuda"
        if self.cuda:
            from triton.testing import do_bench
            self.do_bench = do_bench

    def once(self, fn):
        """Milliseconds of one call."""
        if not self.cuda:
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e3
        start, stop = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop)

    def median(self, fn):
        if self.cuda:
            return self.do_bench(fn, warmup=50, rep=200, return_mode="median")
        times = sorted(self.once(fn) for _ in range(3))
        return times[1]

    def synchronize(self):
        if self.cuda:
            self.torch.cuda.synchronize()


class Config:
    """The tensors of one configuration; float64 reference data stays on the GPU when it fits
    in 40 % of its memory, else in host memory."""

    CHUNK_ELEMENTS = 1 << 23  # per array per chunk: 64 MiB in float64; the tape is ~2T of them

    def __init__(self, torch, device, B, n, T, dtype_name, seed):
        self.B, self.n, self.T, self.dtype_name = B, n, T, dtype_name
        self.dtype = getattr(torch, dtype_name)
        f64 = torch.float64
        store = device
        if device == "cuda":
            _, total = torch.cuda.mem_get_info()
            if 2 * B * n * n * 8 > 0.4 * total:
                store = "cpu"
        self.chunk = max(1, self.CHUNK_ELEMENTS // (n * n))
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        shape = (B, n, n)
        self.M, self.R, self.G = (torch.empty(shape, dtype=self.dtype, device=device)
                                  for _ in range(3))
        self.R64, self.ref = (torch.empty(shape, dtype=f64, device=store) for _ in range(2))
        for lo, hi in self.chunks():
            Mc = torch.rand((hi - lo, n, n), dtype=f64, device=device, generator=gen) * 4.0
            Gc = torch.randn((hi - lo, n, n), dtype=f64, device=device, generator=gen)
            Mc.requires_grad_(True)
            Rc = torch_forward(Mc, T)
            (Rc * Gc).sum().backward()
            Rc = Rc.detach()
            self.M[lo:hi] = Mc.detach()
            self.R[lo:hi] = Rc
            self.G[lo:hi] = Gc
            self.R64[lo:hi] = Rc
            self.ref[lo:hi] = Mc.grad
            del Mc, Gc, Rc

    def chunks(self):
        return ((lo, min(self.B, lo + self.chunk)) for lo in range(0, self.B, self.chunk))

    def median_relerr(self, torch, out, against):
        errors = []
        for lo, hi in self.chunks():
            g = out[lo:hi].double()
            ref = against[lo:hi].to(g.device)
            e = (g - ref).norm(dim=(1, 2)) / ref.norm(dim=(1, 2))
            errors.append(torch.nan_to_num(e, nan=math.inf).cpu())
        return torch.cat(errors).median().item()


def candidates(torch, lib, seeds, cfg, device):
    """(name, factory); a factory allocates what its kernel writes and returns a function that
    runs the kernel once and returns (output, sinkgrad status or None)."""
    dev = sinkgrad_c.CUDA if device == "cuda" else sinkgrad_c.CPU
    esize = cfg.R.element_size()
    B, n, T = cfg.B, cfg.n, cfg.T

    def forward():
        out = torch.empty_like(cfg.M)

        def run():
            lib.forward(dev, esize, B, n, T, cfg.M.data_ptr(), out.data_ptr())
            return out, None
        return run

    def sinkgrad(solver, options, needs_M):
        grad = torch.empty_like(cfg.R)
        status = torch.empty(B, dtype=torch.int32, device=cfg.R.device)
        iterations = torch.empty_like(status)
        M = cfg.M.data_ptr() if needs_M else None

        def run():
            lib.solve(solver, options, dev, esize, B, n, T, M, cfg.R.data_ptr(),
                      cfg.G.data_ptr(), grad.data_ptr(), status.data_ptr(),
                      iterations.data_ptr())
            return grad, status
        return run

    def seed(launch):
        if isinstance(seeds, Exception):
            raise seeds
        return lambda: (launch(), None)

    result = [(FORWARD, forward)]
    for name, solver, options, needs_M in SINKGRAD_SOLVERS:
        result.append((name, lambda s=solver, o=options, m=needs_M: sinkgrad(s, o, m)))
    if device == "cuda":
        result.append((BASELINE, lambda: seed(
            lambda: seeds.run_s001(seeds.corrected_kernel, cfg.R, cfg.G))))
        result.append(("seed001 original", lambda: seed(
            lambda: seeds.run_s001(seeds.original_kernel, cfg.R, cfg.G))))
        if n >= 16 and cfg.dtype == torch.float32:
            result.append(("seed000 block", lambda: seed(lambda: seeds.run_s000(cfg.R, cfg.G))))
    result.append(("torch.linalg.solve", lambda: lambda: (torch_linalg_solve(torch, cfg.R, cfg.G),
                                                          None)))
    return result


def measure(torch, timer, cfg, name, factory, copy_gbs, slow_ms):
    run = factory()
    out, status = run()  # compiles / autotunes Triton kernels; the output that is checked
    timer.synchronize()
    against = cfg.R64 if name == FORWARD else cfg.ref
    err = cfg.median_relerr(torch, out, against)
    not_ok = "-" if status is None else str(int((status != 0).sum().item()))
    del out, status
    probe = timer.once(run)
    note = ""
    if probe > slow_ms:
        ms, note = probe, "1 run"
    else:
        ms = timer.median(run)
    arrays = 2 if name == FORWARD else 3
    gbs = arrays * cfg.B * cfg.n * cfg.n * cfg.R.element_size() / ms / 1e6
    return dict(kernel=name, B=cfg.B, n=cfg.n, T=cfg.T, dtype=cfg.dtype_name, ms=ms, gbs=gbs,
                of_copy=gbs / copy_gbs, err=err, not_ok=not_ok, note=note)


def copy_bandwidth(torch, timer, device):
    """GB/s (bytes read + written) of a 1 GiB device-to-device copy (64 MiB on the cpu)."""
    nbytes = (1 << 30) if device == "cuda" else (1 << 26)
    x = torch.empty(nbytes // 4, device=device)
    y = torch.empty_like(x)
    return 2 * nbytes / timer.median(lambda: y.copy_(x)) / 1e6


def free_memory(torch, device):
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def run_config(torch, lib, seeds, timer, device, config, seed, pattern, copy_gbs, slow_ms):
    """The rows of one configuration. Its tensors live in this frame only, so that they are
    freed when it returns (a closure left behind would keep gigabytes alive)."""
    B, n, T, dtype_name = config
    try:
        cfg = Config(torch, device, B, n, T, dtype_name, seed=seed)
    except Exception as error:
        print(f"FAIL inputs B={B} n={n} T={T} {dtype_name}: {error!r}", file=sys.stderr)
        return [dict(kernel="(inputs)", B=B, n=n, T=T, dtype=dtype_name,
                     failed=f"{type(error).__name__}: {error}".splitlines()[0][:160])]
    timer.synchronize()
    rows = []
    for name, factory in candidates(torch, lib, seeds, cfg, device):
        if pattern is not None and not pattern.search(name):
            continue
        try:
            row = measure(torch, timer, cfg, name, factory, copy_gbs, slow_ms)
        except Exception as error:  # one failing kernel must not end the run
            message = f"{type(error).__name__}: {error}".splitlines()[0][:160]
            row = dict(kernel=name, B=B, n=n, T=T, dtype=dtype_name, failed=message)
            traceback.print_exc(limit=3, file=sys.stderr)
        rows.append(row)
        print("ROW " + format_row(row), flush=True)
        free_memory(torch, device)
    base = [r for r in rows if r["kernel"] == BASELINE and not r.get("failed")]
    for row in rows:
        if base and not row.get("failed") and row["kernel"] != FORWARD:
            row["speedup"] = base[0]["ms"] / row["ms"]
    return rows


HEADER = (f"{'kernel':28s} {'B':>8s} {'n':>3s} {'T':>3s} {'dtype':>7s} {'ms':>10s} {'GB/s':>7s} "
          f"{'of_copy':>7s} {'vs_s001c':>8s} {'relerr':>9s} {'not_ok':>7s}")


def format_row(row):
    if row.get("failed"):
        return (f"{row['kernel']:28s} {row['B']:8d} {row['n']:3d} {row['T']:3d} "
                f"{row['dtype']:>7s}  FAILED: {row['failed']}")
    speedup = row.get("speedup")
    speedup = f"{speedup:8.2f}" if speedup is not None else f"{'-':>8s}"
    return (f"{row['kernel']:28s} {row['B']:8d} {row['n']:3d} {row['T']:3d} {row['dtype']:>7s} "
            f"{row['ms']:10.4f} {row['gbs']:7.0f} {row['of_copy']:7.2f} {speedup} "
            f"{row['err']:9.2e} {row['not_ok']:>7s}" + (f"  ({row['note']})" if row["note"] else ""))


def compare(args, lib):
    import torch
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("compare_with_seeds: no CUDA device (use --selftest or --device cpu)",
              file=sys.stderr)
        return 2
    timer = Timer(torch, device)
    seeds = None
    if device == "cuda":
        try:
            seeds = load_seeds(args.seed_bench)
        except Exception as error:  # the sinkgrad and torch rows still run
            seeds = error
            print(f"seed kernels unavailable: {error!r}", file=sys.stderr)
        import triton
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"triton {triton.__version__}, sinkgrad_c {lib.path}")
    else:
        print(f"device: cpu (dry run), torch {torch.__version__}, sinkgrad_c {lib.path}")

    copy_gbs = copy_bandwidth(torch, timer, device)
    print(f"copy ceiling: {copy_gbs:.0f} GB/s (read + write)", flush=True)

    pattern = re.compile(args.kernels) if args.kernels else None
    rows = []
    for index, (B, n, T, dtype_name) in enumerate(CONFIGS):
        B = max(1, B // args.batch_divisor)
        rows += run_config(torch, lib, seeds, timer, device, (B, n, T, dtype_name), index,
                           pattern, copy_gbs, args.slow_ms)
        free_memory(torch, device)

    print()
    print(f"copy ceiling {copy_gbs:.0f} GB/s; vs_s001c = seed001 corrected ms / row ms; "
          "relerr = median ||g - ref||_F / ||ref||_F vs float64 autograd (forward: vs R64)")
    print(HEADER)
    for row in rows:
        print(format_row(row))
    # The exit status is sinkgrad's: a seed or torch row that fails (e.g. a Triton kernel too
    # large to compile at n = 32) is reported in the table but is not this project's failure.
    failed = [r for r in rows if r.get("failed") and not r["kernel"].startswith(("seed", "torch"))]
    if failed:
        print(f"{len(failed)} sinkgrad rows failed", file=sys.stderr)
    return 1 if failed else 0


def main():
    args = parse_args()
    if args.selftest:
        require_modules(["numpy"], "python3-numpy")
        return selftest(sinkgrad_c.SinkgradC(args.lib))
    require_modules(["numpy", "torch"], "python3-numpy and PyTorch (pip install torch)")
    # torch before libsinkgrad_c: where both need a CUDA runtime of the same soname, the
    # process then keeps the copy that torch ships rather than the one sinkgrad was built with.
    importlib.import_module("torch")
    return compare(args, sinkgrad_c.SinkgradC(args.lib))


if __name__ == "__main__":
    sys.exit(main())
