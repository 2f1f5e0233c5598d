"""The host time of one step through sinkgrad.torch at a batch small enough that the library's
work is negligible, so that what is timed is the layer's fixed cost per step: its Python, the
autograd Function, the ctypes calls and the library's checks. Runs on the cpu (no GPU needed)
or on CUDA; scripts/torch_layer_overhead.py measures the same on CUDA at mHC batch sizes
beside the GPU time. Prints one markdown table, then (--profile) torch.profiler's table of
where a layer step's host time goes.

    PYTHONPATH=build/python python3 scripts/torch_layer_host_cost.py             # cpu
    PYTHONPATH=build/python python3 scripts/torch_layer_host_cost.py --device cuda \
        --batch 65536 --profile

Rows: "layer" is sgt.sinkhorn + torch.autograd.grad (a training step); "raw" the layer's
library calls (_kernels.forward, _kernels.backward with on_failure="unrolled") on prepared
buffers; "layer - raw" what the layer adds. "torch floor": the same step through a custom
autograd.Function that does no work (returns its input, passes the gradient through): what
torch's Function and autograd.grad cost alone on this device, below which no layer built on
them can go; "torch floor + 4 tensors" the same Function allocating what a layer step must
(R in the forward; the gradient, statuses and iterations in the backward); "native op" the
same step through one of torch's own differentiable ops (x.tanh(): one kernel each way, its
backward node in C++), the floor of a layer compiled into a C++ autograd op. The "chain" column:
--chain layers applied one after the other and differentiated by one autograd.grad, per layer,
as a model with one Sinkhorn per block pays it (torch's fixed cost of starting a backward is
shared by the chain). On CUDA the autograd engine runs a Function's backward on a thread of
its own, so every backward hands work to that thread and back. Each cell is the median over
--repeats rounds of the wall clock of --steps steps run back to back, divided by the step count
(and by --chain for the chain column).
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
    parser.add_argument("--chain", type=int, default=16, help="layers in the chain column")
    parser.add_argument("--profile", action="store_true",
                        help="print torch.profiler's table of a layer step (the first backward)")
    args = parser.parse_args()
    synchronize = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch, args.n, args.n)
    M = (4 * torch.rand(shape, generator=generator)).to(args.device)
    G = torch.randn(shape, generator=generator).to(args.device)
    x = M.clone().requires_grad_(True)
    T = args.iterations
    K = args.chain
    chain_steps = max(1, args.steps // K)
    print(f"host us per forward + backward, n = {args.n}, B = {args.batch}, T = {T}, float32, "
          f"{args.device}, torch {torch.__version__}, median of {args.repeats} x {args.steps} "
          f"steps; chain: {K} layers, one autograd.grad, per layer\n")
    print(f"| backward | layer | raw | layer - raw | layer, chain of {K} |")
    print("|---|---|---|---|---|")

    def chained(apply):
        def step():
            y = x
            for _ in range(K):
                y = apply(y)
            return torch.autograd.grad(y, x, G)
        return step

    for backward in args.backwards:
        def layer(backward=backward):
            return torch.autograd.grad(sgt.sinkhorn(x, T, backward=backward), x, G)

        def raw(backward=backward):
            R = _kernels.forward(M, T)
            return _kernels.backward(M, R, G, T, backward, "", "unrolled")

        layer_us = per_step_us(layer, args.steps, args.repeats, synchronize)
        raw_us = per_step_us(raw, args.steps, args.repeats, synchronize)
        chain_us = per_step_us(chained(lambda y, b=backward: sgt.sinkhorn(y, T, backward=b)),
                               chain_steps, args.repeats, synchronize) / K
        print(f"| {backward} | {layer_us:.1f} | {raw_us:.1f} | {layer_us - raw_us:.1f} | "
              f"{chain_us:.1f} |", flush=True)
    floors = (("torch floor (an autograd.Function doing nothing)", _Identity.apply),
              ("torch floor + 4 tensors (what a layer step allocates)", _Allocating.apply),
              ("native op (x.tanh(), no Python Function)", torch.tanh))
    for name, apply in floors:
        floor_us = per_step_us(lambda f=apply: torch.autograd.grad(f(x), x, G), args.steps,
                               args.repeats, synchronize)
        chain_us = per_step_us(chained(apply), chain_steps, args.repeats, synchronize) / K
        print(f"| {name} | {floor_us:.1f} | - | - | {chain_us:.1f} |", flush=True)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        backward = args.backwards[0]
        with profile(activities=[ProfilerActivity.CPU]) as trace:
            for _ in range(200):
                torch.autograd.grad(sgt.sinkhorn(x, T, backward=backward), x, G)
            synchronize()
        print(f"\ntorch.profiler, 200 layer steps ({backward}), host time by op:\n")
        print(trace.key_averages().table(sort_by="cpu_time_total", row_limit=20))


class _Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits):
        return logits.view_as(logits)

    @staticmethod
    def backward(ctx, grad):
        return grad


class _Allocating(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits):
        R = torch.empty_like(logits)
        ctx.save_for_backward(logits, R)
        return R

    @staticmethod
    def backward(ctx, grad):
        _, R = ctx.saved_tensors
        torch.empty((2, R.shape[0]), dtype=torch.int32, device=R.device)
        return torch.empty_like(R)


if __name__ == "__main__":
    main()
