"""The torch side of compare_with_seeds.py: the reference forward, the torch.linalg.solve row,
the seeds' benchmark loaded as a module, the timer, and the tensors of one configuration."""
import importlib.util
import math
import os
import time


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
