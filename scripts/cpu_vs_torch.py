#!/usr/bin/env python3
"""sinkgrad's CPU forward + backward against PyTorch CPU autograd of the same forward.

    /usr/bin/python3 scripts/cpu_vs_torch.py [--lib build/lib/libsinkgrad_c.so] [--batch 65536]
        [--sizes 4,8,16] [--iterations 20] [--threads 2] [--repeats 5] [--dtype float32]

For each n and solver: the median wall time of sinkgrad's forward (sinkgrad_forward) plus its
backward (sinkgrad_solve), and of PyTorch's forward (exp, then T column and row divisions, as
MATH.md writes it) plus loss.backward() of sum(R * G), both on the same random logits with
OMP_NUM_THREADS / torch.set_num_threads = --threads. Prints a Markdown table with the speed-up
(torch / sinkgrad) and the largest relative gradient difference of the unrolled solver against
autograd (a check that both compute the same derivative). Needs numpy and torch (Debian:
python3-numpy, python3-torch)."""
import argparse
import os
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=None, help="libsinkgrad_c.so (default: build/lib)")
    parser.add_argument("--batch", type=int, default=65536)
    parser.add_argument("--sizes", default="4,8,16")
    parser.add_argument("--iterations", type=int, default=20, help="forward iterations T")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--solvers", default="unrolled,cg_plain,cg_corrected,direct")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    try:
        import numpy as np
        import torch
    except ImportError as e:
        sys.exit(f"cpu_vs_torch.py needs numpy and torch ({e}); on Debian: apt-get install "
                 "python3-numpy python3-torch, and run it with /usr/bin/python3")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "python"))
    from sinkgrad._capi import CPU, Library
    lib = Library(args.lib)
    torch.set_num_threads(args.threads)
    dtype = np.float32 if args.dtype == "float32" else np.float64
    T, B = args.iterations, args.batch

    def timed(fn):
        fn()  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    print(f"# B = {B}, T = {T}, {args.dtype}, {args.threads} threads, torch {torch.__version__}, "
          f"median of {args.repeats}")
    print("| n | solver | sinkgrad fwd+bwd ms | torch autograd fwd+bwd ms | torch / sinkgrad |")
    print("|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(n)
        M = rng.standard_normal((B, n, n)).astype(dtype)
        G = rng.standard_normal((B, n, n)).astype(dtype)
        Mt, Gt = torch.from_numpy(M), torch.from_numpy(G)

        def torch_step():
            logits = Mt.clone().requires_grad_(True)
            X = torch.exp(logits)
            for _ in range(T):
                X = X / X.sum(dim=-2, keepdim=True)
                X = X / X.sum(dim=-1, keepdim=True)
            (X * Gt).sum().backward()
            return logits.grad

        torch_ms = timed(torch_step)
        reference = torch_step().numpy()
        R = np.empty_like(M)
        grad = np.empty_like(M)
        status = np.empty(B, dtype=np.int32)
        iterations = np.empty(B, dtype=np.int32)
        for solver in args.solvers.split(","):
            def step():
                lib.forward(CPU, M.itemsize, B, n, T, M.ctypes.data, R.ctypes.data)
                lib.solve(solver, "", CPU, M.itemsize, B, n, T, M.ctypes.data, R.ctypes.data,
                          G.ctypes.data, grad.ctypes.data, status.ctypes.data,
                          iterations.ctypes.data)

            ms = timed(step)
            note = ""
            if solver == "unrolled":
                diff = np.abs(grad - reference).max() / max(np.abs(reference).max(), 1e-30)
                note = f" (max rel. diff to autograd {diff:.1e})"
            print(f"| {n} | {solver}{note} | {ms:.1f} | {torch_ms:.1f} | {torch_ms / ms:.1f}x |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
