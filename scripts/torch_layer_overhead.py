"""Where the time of one training step through sinkgrad.torch goes on CUDA at mHC batch sizes:
the host's time per step (Python, autograd, ctypes: what a step costs when the GPU is never the
bottleneck), the GPU's time per step (the same step captured in a CUDA graph and replayed, so no
host work is timed), and a device-to-device copy of the same bytes (forward: M in, R out;
backward: R, G in, dL/dM out; five arrays) as the floor. Prints one markdown table.

    # on the GPU machine, after a build into build/:
    PYTHONPATH=build/python python3 scripts/torch_layer_overhead.py

Rows: "layer" is sgt.sinkhorn + torch.autograd.grad (what a training step runs); "raw" is the
layer's two library calls (_kernels.forward, _kernels.solve) on prepared float32 buffers;
"custom ops" the same two calls through torch.ops.sinkgrad (torch >= 2.4), what
"layer, torch.compile" (the layer in torch.compile(fullgraph=True)) runs. Host time: wall
clock over `--steps` steps launched back to back, divided by the step count, after a
synchronisation (the GPU runs ahead and never stalls the host at these sizes). GPU time: CUDA
events around `--steps` replays of the captured step.
"""
import argparse
import sys
import time

import torch

try:
    import sinkgrad.torch as sgt
    from sinkgrad import _kernels, _ops
except ImportError as error:
    sys.exit(f"torch_layer_overhead.py: {error}; run with PYTHONPATH=build/python after a build")


def host_us(step, steps):
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(steps):
        step()
    host = time.perf_counter() - begin
    torch.cuda.synchronize()
    return 1e6 * host / steps


def graph_us(step, steps):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        graph.replay()
    end.record()
    end.synchronize()
    return 1e3 * start.elapsed_time(end) / steps


def steps_for(n, B, T, backward):
    generator = torch.Generator(device="cuda").manual_seed(n * 1000 + B % 997)
    M = 4 * torch.rand(B, n, n, device="cuda", generator=generator)
    G = torch.randn(B, n, n, device="cuda", generator=generator)
    x = M.clone().requires_grad_(True)

    def layer():
        R = sgt.sinkhorn(x, T, backward=backward)
        return torch.autograd.grad(R, x, G)

    def raw():
        R = _kernels.forward(M, T)
        return _kernels.solve(M, R, G, T, backward, "")

    steps = {"layer": layer, "raw": raw}
    if _ops.CUSTOM_OPS:
        arguments = (T, backward, "", "keep", "columns_first", 0.0)

        def custom_ops():
            R = torch.ops.sinkgrad.sinkhorn(M, *arguments)
            return torch.ops.sinkgrad.sinkhorn_backward(M, R, G, *arguments)
        steps["custom ops"] = custom_ops
        torch._dynamo.reset()
        compiled = torch.compile(lambda y: sgt.sinkhorn(y, T, backward=backward),
                                 fullgraph=True)

        def compiled_layer():
            return torch.autograd.grad(compiled(x), x, G)
        steps["layer, torch.compile"] = compiled_layer
    source = torch.empty(5 * B * n * n // 2, device="cuda")
    target = torch.empty_like(source)
    return steps, lambda: target.copy_(source)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--batches", type=int, nargs="+", default=[4096, 65536])
    parser.add_argument("--backwards", nargs="+", default=["cg_corrected", "unrolled"])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_layer_overhead.py: no CUDA device")
    print(f"forward + backward, T = {args.iterations}, float32, microseconds per step (mean of "
          f"{args.steps}), {torch.cuda.get_device_name()}, torch {torch.__version__}\n")
    print("| n | B | backward | path | host us/step | GPU us/step (graph) | copy of the same "
          "bytes, us |")
    print("|---|---|---|---|---|---|---|")
    for n in args.ns:
        for B in args.batches:
            for backward in args.backwards:
                steps, copy = steps_for(n, B, args.iterations, backward)
                copy_us = graph_us(copy, args.steps)
                for name, step in steps.items():
                    print(f"| {n} | {B} | {backward} | {name} | "
                          f"{host_us(step, args.steps):.1f} | {graph_us(step, args.steps):.1f} | "
                          f"{copy_us:.1f} |", flush=True)


if __name__ == "__main__":
    main()
