"""Forward + backward of sinkgrad's PyTorch layer beside plain PyTorch autograd of the same
loop, torch.compile of that loop, the raw library calls under the layer (its overhead), and
TransformerEngine's fused mHC Sinkhorn (n = 4; Triton kernels from ../shared/reference/te_mhc,
imported for side-by-side timing only). Prints one markdown table (milliseconds, median).

    # on the GPU machine, after a build into build/:
    PYTHONPATH=build/python python3 scripts/torch_layer_bench.py
    # plumbing check on the cpu, small sizes:
    PYTHONPATH=build/python python3 scripts/torch_layer_bench.py --device cpu --batches 256 \
        --ns 4 --repeats 2

Each cell times the whole step a training loop pays: R = f(M), then dL/dM by
torch.autograd.grad(R, M, G). Inputs: M = 4 * rand, G = randn, in the row's dtype; the layer
and the plain loop compute bfloat16 inputs in float32 (cast in, cast out), TE takes them as
they are. CUDA events around each call, after 3 warm-up calls; torch.compile's first call
(compilation) is a warm-up call. "raw" is the layer's two library calls on float32 buffers
prepared outside the timing (no autograd, no casts, no copies); layer - raw is the overhead.
A method that runs out of GPU memory shows "oom".
"""
import argparse
import os
import statistics
import sys
import time

import torch

try:
    import sinkgrad.torch as sgt
    from sinkgrad import _kernels
except ImportError as error:
    sys.exit(f"torch_layer_bench.py: {error}; run with PYTHONPATH=build/python after a build")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# SINKGRAD_TE_MHC names the folder elsewhere (on the GPU machine: .devdeps/te_mhc).
TE_DIR = os.environ.get("SINKGRAD_TE_MHC", os.path.join(ROOT, "..", "shared", "reference", "te_mhc"))


def plain_sinkhorn(M, T):
    X = torch.exp(M.float())
    for _ in range(T):
        X = X / X.sum(-2, keepdim=True)
        X = X / X.sum(-1, keepdim=True)
    return X.to(M.dtype)


def te_sinkhorn():
    """TE's mhc_fused_sinkhorn, or None when Triton or the extract is not there."""
    if not os.path.isdir(TE_DIR):
        return None
    sys.path.insert(0, TE_DIR)
    try:
        from te_sinkhorn import mhc_fused_sinkhorn
    except Exception as error:  # Triton missing or incompatible: leave the column empty
        print(f"TE's mHC kernels not importable: {error}", file=sys.stderr)
        return None
    return lambda M, T: mhc_fused_sinkhorn(M.view(-1, 1, 4, 4), 4, True, T).view(M.shape)


def timed(step, device, repeats):
    """Median milliseconds of step() after 3 warm-up calls; 'oom' if memory runs out."""
    try:
        for _ in range(3):
            step()
        times = []
        for _ in range(repeats):
            if device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                step()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                begin = time.perf_counter()
                step()
                times.append(1e3 * (time.perf_counter() - begin))
        return f"{statistics.median(times):.3f}"
    except torch.cuda.OutOfMemoryError:
        return "oom"
    finally:
        if device == "cuda":
            torch.cuda.empty_cache()


def through_autograd(function, M, G):
    def step():
        x = M.detach().requires_grad_(True)
        return torch.autograd.grad(function(x), x, G)
    return step


def row(n, B, dtype, args, te):
    generator = torch.Generator(device=args.device).manual_seed(n * 1000 + B % 997)
    M = (4 * torch.rand(B, n, n, device=args.device, generator=generator)).to(dtype)
    G = torch.randn(B, n, n, device=args.device, generator=generator).to(dtype)
    T = args.iterations
    cells = {}
    for backward in ("unrolled", "cg_corrected"):
        cells[f"layer {backward}"] = timed(through_autograd(
            lambda x, b=backward: sgt.sinkhorn(x, T, backward=b), M, G), args.device,
            args.repeats)
        M32, G32 = M.float().contiguous(), G.float().contiguous()

        def raw(b=backward):
            R = _kernels.forward(M32, T)
            return _kernels.solve(M32, R, G32, T, b, "")
        cells[f"raw {backward}"] = timed(raw, args.device, args.repeats)
    cells["torch autograd"] = timed(through_autograd(lambda x: plain_sinkhorn(x, T), M, G),
                                    args.device, args.repeats)
    if args.compile:
        torch._dynamo.reset()
        compiled = torch.compile(plain_sinkhorn, dynamic=False)
        cells["torch.compile"] = timed(through_autograd(lambda x: compiled(x, T), M, G),
                                       args.device, args.repeats)
    if te is not None and n == 4:
        cells["TE fused"] = timed(through_autograd(lambda x: te(x, T), M, G), args.device,
                                  args.repeats)
    del M, G
    return cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--ns", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--batches", type=int, nargs="+", default=[2**16, 2**20])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    args = parser.parse_args()
    args.compile = args.compile and hasattr(torch, "compile")  # torch >= 2.0
    te = te_sinkhorn() if args.device == "cuda" else None
    columns = ["layer unrolled", "raw unrolled", "layer cg_corrected", "raw cg_corrected",
               "torch autograd"] + (["torch.compile"] if args.compile else []) + \
        (["TE fused"] if te is not None else [])
    where = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"forward + backward, T = {args.iterations}, ms (median of {args.repeats}), {where}, "
          f"torch {torch.__version__}\n")
    print("| n | B | dtype | " + " | ".join(columns) + " |")
    print("|---" * (3 + len(columns)) + "|")
    for n in args.ns:
        for B in args.batches:
            for dtype in args.dtypes:
                cells = row(n, B, getattr(torch, dtype), args, te)
                exponent = B.bit_length() - 1
                batch = f"2^{exponent}" if B == 1 << exponent else str(B)
                print(f"| {n} | {batch} | {dtype} | " +
                      " | ".join(cells.get(c, "-") for c in columns) + " |", flush=True)


if __name__ == "__main__":
    main()
