"""A small mHC-like stream-mixing model trained with sinkgrad's PyTorch layer on the cpu.

Each sample holds n streams of width d, x of shape (batch, n, d). A layer mixes them with a
doubly stochastic-ish R = Sinkhorn_T(exp(logits)) of shape (n, n) per sample, the logits being
a learned static matrix plus a learned function of the sample (as in manifold-constrained
hyper-connections), then adds a small residual MLP. The task: reproduce the streams in a fixed
permuted order, which the mixing can only learn by driving R towards that permutation.

    PYTHONPATH=build/python /usr/bin/python3 examples/torch_mixing.py --steps 40 \
        --backward cg_corrected
"""
import argparse
import os
import sys


def _import_or_reexec():
    """torch and the sinkgrad package; where `python3` is not the system Python (pyenv, venv)
    and lacks Debian's python3-torch, re-runs this script with /usr/bin/python3."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("SINKGRAD_EXAMPLE_REEXEC"):
            os.environ["SINKGRAD_EXAMPLE_REEXEC"] = "1"
            os.execv(system, [system] + sys.argv)
        sys.exit(f"torch_mixing.py: {error}; install python3-torch")


_import_or_reexec()

import torch  # noqa: E402
from torch import nn  # noqa: E402

try:
    import sinkgrad.torch as sgt  # noqa: E402
except ImportError as error:
    sys.exit(f"torch_mixing.py: {error}; run with PYTHONPATH=build/python after a build")


class StreamMixing(nn.Module):
    def __init__(self, n, d, iterations, backward, options=None):
        super().__init__()
        self.static = nn.Parameter(0.01 * torch.randn(n, n))
        self.dynamic = nn.Linear(n * d, n * n)
        nn.init.zeros_(self.dynamic.weight)
        nn.init.zeros_(self.dynamic.bias)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, d))
        self.iterations, self.backward, self.options = iterations, backward, options
        self.stats = sgt.SolveStats()

    def mixing(self, x):
        batch, n, _ = x.shape
        logits = self.static + self.dynamic(x.flatten(1)).view(batch, n, n)
        return sgt.sinkhorn(logits, self.iterations, backward=self.backward,
                            options=self.options, stats=self.stats, on_failure="unrolled")

    def forward(self, x):
        mixed = self.mixing(x) @ x  # (batch, n, n) @ (batch, n, d)
        return mixed + 0.1 * self.mlp(mixed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4, help="streams per sample (R is n x n)")
    parser.add_argument("--d", type=int, default=16, help="width of each stream")
    parser.add_argument("--batch", type=int, default=64, help="samples per step")
    parser.add_argument("--steps", type=int, default=40, help="training steps")
    parser.add_argument("--iterations", type=int, default=20,
                        help="T, the Sinkhorn iterations of the forward")
    parser.add_argument("--backward", default="cg_corrected",
                        help="the solver of the backward (sinkgrad solvers lists them)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                        help="precision of the model")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = StreamMixing(args.n, args.d, args.iterations, args.backward)
    dtype = getattr(torch, args.dtype)
    model.to(dtype)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.1)
    permutation = torch.roll(torch.arange(args.n), 1)
    first = last = None
    for step in range(args.steps):
        x = torch.randn(args.batch, args.n, args.d, dtype=dtype)
        loss = (model(x) - x[:, permutation]).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        first = loss.item() if first is None else first
        last = loss.item()
        if step % 10 == 0 or step == args.steps - 1:
            # Matrices whose solver did not report ok; on_failure="unrolled" gave them the
            # unrolled gradient instead.
            counts = {k: v for k, v in model.stats.counts().items() if k != "ok" and v}
            print(f"step {step:3d}  loss {last:.4f}  backward failures "
                  f"{sum(counts.values())} {counts or ''}")
    R = model.mixing(torch.randn(1, args.n, args.d, dtype=dtype))[0]
    print("learned mixing (one sample):")
    print(R.detach().float().numpy().round(2))
    print(f"loss {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
