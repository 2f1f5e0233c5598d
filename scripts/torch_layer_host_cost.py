"""The host time of one step through sinkgrad.torch at a batch small enough that the library's
work is negligible, so that what is timed is the layer's fixed cost per step: its Python, the
autograd Function, the ctypes calls and the library's checks. Runs on the cpu (no GPU needed)
or on CUDA; scripts/torch_layer_overhead.py measures the same on CUDA at mHC batch sizes
beside the GPU time. Prints one markdown table.

    PYTHONPATH=build/python python3 scripts/torch_layer_host_cost.py             # cpu
    PYTHONPATH=build/python python3 scripts/torch_layer_host_cost.py --device cuda

Rows: "layer" is sgt.sinkhorn + torch.autograd.grad (a training step); "raw" the layer's
library calls (_kernels.forward, _kernels.backward with on_failure="unrolled") on prepared
buffers; "layer - raw" what the layer adds. Last, "torch floor": the same step through a
custom autograd.Function that does no work (returns its input, passes the gradient through):
what torch's Function and autograd.grad cost alone on this device, below which no layer built
on them can go. Each cell is the median over --repeats rounds of
the wall clock of --steps steps run back to back, divided by the step count.
"""
import argparse
import statistics
import sys
import time

import torch

try:
    import sinkgrad.torch as sgt
    from sinkgrad import _kernels
except ImportError as error:
    sys.exit(f"torch_layer_host_cost.py: {error}; run with PYTHONPATH=build/python after a build")


def per_step_us(step, steps, repeats, synchronize):
    for _ in range(20):
        step()
    rounds = []
    for _ in range(repeats):
        synchronize()
        begin = time.perf_counter()
        for _ in range(steps):
            step()
        rounds.append(1e6 * (time.perf_counter() - begin) / steps)
        synchronize()
    return statistics.median(rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--backwards", nargs="+", default=["cg_corrected", "unrolled"])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    synchronize = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch, args.n, args.n)
    M = (4 * torch.rand(shape, generator=generator)).to(args.device)
    G = torch.randn(shape, generator=generator).to(args.device)
    x = M.clone().requires_grad_(True)
    T = args.iterations
    print(f"host us per forward + backward, n = {args.n}, B = {args.batch}, T = {T}, float32, "
          f"{args.device}, torch {torch.__version__}, median of {args.repeats} x {args.steps}\n")
    print("| backward | layer | raw | layer - raw |")
    print("|---|---|---|---|")
    for backward in args.backwards:
        def layer(backward=backward):
            return torch.autograd.grad(sgt.sinkhorn(x, T, backward=backward), x, G)

        def raw(backward=backward):
            R = _kernels.forward(M, T)
            return _kernels.backward(M, R, G, T, backward, "", "unrolled")

        layer_us = per_step_us(layer, args.steps, args.repeats, synchronize)
        raw_us = per_step_us(raw, args.steps, args.repeats, synchronize)
        print(f"| {backward} | {layer_us:.1f} | {raw_us:.1f} | {layer_us - raw_us:.1f} |",
              flush=True)
    floor_us = per_step_us(lambda: torch.autograd.grad(_Identity.apply(x), x, G), args.steps,
                           args.repeats, synchronize)
    print(f"| torch floor (an autograd.Function doing nothing) | {floor_us:.1f} | - | - |")


class _Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits):
        return logits.view_as(logits)

    @staticmethod
    def backward(ctx, grad):
        return grad


if __name__ == "__main__":
    main()
