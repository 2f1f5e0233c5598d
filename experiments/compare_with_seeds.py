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
import importlib
import os
import re
import sys
import traceback

# The sinkgrad package: ../python (source tree) or python/ (share/sinkgrad, installed); this
# folder for the modules beside this file.
for _folder in ("../python", "python"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), _folder))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sinkgrad import _capi  # noqa: E402
from compare_selftest import selftest  # noqa: E402
from compare_torch import Config, Timer, load_seeds, torch_linalg_solve  # noqa: E402
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


def candidates(torch, lib, seeds, cfg, device):
    """(name, factory); a factory allocates what its kernel writes and returns a function that
    runs the kernel once and returns (output, sinkgrad status or None)."""
    dev = _capi.CUDA if device == "cuda" else _capi.CPU
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
        return selftest(_capi.Library(args.lib), SINKGRAD_SOLVERS)
    require_modules(["numpy", "torch"], "python3-numpy and PyTorch (pip install torch)")
    # torch before libsinkgrad_c: where both need a CUDA runtime of the same soname, the
    # process then keeps the copy that torch ships rather than the one sinkgrad was built with.
    importlib.import_module("torch")
    return compare(args, _capi.Library(args.lib))


if __name__ == "__main__":
    sys.exit(main())
