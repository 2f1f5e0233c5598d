#!/usr/bin/env python3
"""sinkgrad's PyTorch layer and library calls beside TransformerEngine's fused mHC Sinkhorn
(n = 4, rows_first), Megatron-LM dev's fused Triton Sinkhorn (tilekernels, n = 4, 8, 16, 32),
PyTorch autograd and torch.compile of the same forward: one run, one markdown table.

    # on the GPU machine, after a build into /tmp/build, from the repository root:
    LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu PYTHONPATH=/tmp/build/python \\
        python3 scripts/side_by_side.py --json $OUT/side_by_side.json \\
        --markdown $OUT/side_by_side.md
    # plumbing check on the cpu (no TE / Megatron rows), small sizes:
    PYTHONPATH=build/python /usr/bin/python3 scripts/side_by_side.py --device cpu \\
        --batches 256 --n 4,8

The rivals are imported from --reference (default ../shared/reference beside the repository;
third-party code, timing only, never copied into it): te_mhc/ (an extract of TransformerEngine's
transformer_engine/common/triton/mhc.py and of its mHCSinkhornOp) and megatron_mhc/ (Megatron-LM
dev's megatron/core/fusions/fused_mhc_kernels.py). Both need Triton and CUDA; where they do not
import, their rows say "not available" and why.

Comparisons (docs/math.md, "Forward conventions"). Each (convention, n) is a group of rows:
  rows_first, n = 4 (TransformerEngine's forward: exp(M), T times rows then columns, eps 0):
           TE's bare kernels (history stored / recomputed), TE's autograd op, then sinkgrad
           and torch with forward="rows_first".
  tilekernels, every n of --n (Megatron-LM dev's: softmax_rows(M) + eps, columns, then T - 1
           times rows and columns, eps = 1e-6 in every denominator): Megatron's bare kernels
           and its autograd op, then sinkgrad and torch with forward="tilekernels", eps=1e-6.
Methods in a group: the rival's; "sinkgrad layer <b>" (sgt.sinkhorn + torch.autograd.grad,
backward b = unrolled, cg_corrected, direct; default on_failure, eager); "sinkgrad kernels <b>"
(the layer's two library calls, sinkgrad._kernels.forward and .solve, without autograd; float32
only); "torch autograd" (the forward transcribed in plain torch, computed in float32, eager
autograd) and "torch.compile" (that function under torch.compile, one compile per convention,
n and dtype, the batch dimension marked dynamic; --compile-static compiles per shape).

Inputs: M = 4 * rand and G = randn, (B, n, n), made in float32 and cast to the row's input
dtype; every method takes that tensor as it is. The layer computes bfloat16 in float32 and
casts back; TE's op casts to float32 and back; Megatron's kernels read bfloat16 and keep their
saved matrix and the gradient in bfloat16; the torch rows cast to float32 and back. The bare TE
kernels and sinkgrad's library calls take float32 only: they have no bfloat16 rows.

Columns:
  fwd ms       median time of the forward alone (for the autograd rows: with the graph built).
  fwd+bwd ms   median time of forward + backward (dL/dM for the cotangent G).
  of copy      bytes a forward must move at least (M read, R written: 2 B n^2 elements of the
               input dtype; forward + backward 5: also G and R read, dL/dM written) per second,
               over a 1 GiB device-to-device copy (read + write) measured in the same run.
  kept B/mat   bytes per matrix the forward leaves allocated for the backward beyond its
               output: torch.cuda.memory_allocated() after the forward minus before it, minus
               the output's bytes (the legend under the table states what each method keeps).
  bwd scratch  bytes per matrix the backward allocates beyond the gradient it returns, at its
               peak (torch.cuda.max_memory_allocated() during the backward).
  grad err     max over the first --check matrices of ||g - g64||_F / ||g64||_F, g64 the
               float64 torch.autograd gradient of the row's T-step forward on the same (input
               dtype) M and G upcast to float64. fwd err (JSON only): the same for R.
  grad err implicit  (cg_corrected, direct) the same against the float64 implicit gradient
               (sinkgrad's direct solver in float64): the implicit gradient is the derivative
               of the converged forward, so against g64 it also differs by how far the T-step
               forward is from convergence (and, with eps > 0, by an error of order eps).
Timing: triton.testing.do_bench (median; it clears the L2 between calls) when Triton imports,
else CUDA events (median of --repeats after 3 warm-up calls); on --device cpu time.perf_counter
(median of --repeats after 1). Every method runs forward + backward twice first (compilation,
autotuning), then once for memory and errors, then is timed. A method that fails prints its
row with the error ("oom": out of GPU memory) and the run goes on. Memory is not measured on
the cpu. Megatron's backward kernel computes its workspace offsets in int32: where
B 2 T n^2 >= 2^31 (T = 20: B = 2^20 at n >= 8, B = 2^16 at n = 32) its rows time the forward
only. A run of the defaults takes several minutes: --dtypes, --n, --batches and --methods split
it; --json and --markdown write the results as well, after every row.
"""
import argparse
import gc
import importlib
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "..", "shared", "reference")
GROUPS = ("te", "megatron", "layer", "kernels", "torch", "compile")
SOLVERS = ("unrolled", "cg_corrected", "direct")
TILEKERNELS_EPS = 1e-6
HALF = (torch.bfloat16, torch.float16)


def parse_args():
    def ints(text):  # "4096,2^16"
        return [2 ** int(v.split("^")[1]) if "^" in v else int(v) for v in text.split(",")]

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--batches", type=ints, default=None,
                   help="B list, e.g. 4096,65536,2^20 (default 2^12,2^16,2^20; cpu: 256)")
    p.add_argument("--n", type=ints, default=[4, 8, 16, 32], help="n list (default 4,8,16,32)")
    p.add_argument("--dtypes", default="float32,bfloat16", help="input dtypes")
    p.add_argument("--T", type=int, default=20, help="forward iterations (default 20)")
    p.add_argument("--conventions", default="rows_first,tilekernels",
                   help="groups to run: rows_first (n = 4, beside TE), tilekernels (beside "
                        "Megatron)")
    p.add_argument("--methods", default=",".join(GROUPS),
                   help=f"method groups to run (default all: {','.join(GROUPS)})")
    p.add_argument("--reference", default=REFERENCE,
                   help="folder holding te_mhc/ and megatron_mhc/ (default: "
                        "../shared/reference beside the repository)")
    p.add_argument("--check", type=int, default=256,
                   help="matrices compared with the float64 reference (default 256)")
    p.add_argument("--compile-static", action="store_true",
                   help="torch.compile per shape (dynamic=False) instead of a dynamic batch")
    p.add_argument("--warmup-ms", type=float, default=25, help="do_bench warm-up (default 25)")
    p.add_argument("--rep-ms", type=float, default=100, help="do_bench repetition (default 100)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed calls without do_bench (default 10; cpu 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the rows as JSON here")
    p.add_argument("--markdown", default=None, help="also write the table here")
    args = p.parse_args()
    if args.batches is None:
        args.batches = [256] if args.device == "cpu" else [2 ** 12, 2 ** 16, 2 ** 20]
    if args.repeats is None:
        args.repeats = 5 if args.device == "cpu" else 10
    args.dtypes = [getattr(torch, d, None) for d in args.dtypes.split(",")]
    if not all(isinstance(d, torch.dtype) for d in args.dtypes):
        p.error("--dtypes: a comma-separated list of torch dtypes, e.g. float32,bfloat16")
    args.conventions = args.conventions.split(",")
    args.methods = set(args.methods.split(","))
    for name in args.methods - set(GROUPS):
        p.error(f"unknown method group {name!r} (known: {', '.join(GROUPS)})")
    return args


# ------------------------------------------------------------------ forwards in plain torch

def plain_forward(M, T, convention, eps):
    """The convention's forward written out (docs/math.md): rows_first is T times rows, then
    columns of exp(M); tilekernels starts from softmax_rows(M) + eps, normalises the columns,
    then T - 1 times rows and columns; eps in every denominator (not added when it is 0)."""
    def rows(X):
        s = X.sum(-1, keepdim=True)
        return X / (s + eps if eps else s)

    def cols(X):
        s = X.sum(-2, keepdim=True)
        return X / (s + eps if eps else s)

    if convention == "tilekernels":
        X = torch.softmax(M, dim=-1)
        X = cols(X + eps if eps else X)
        for _ in range(T - 1):
            X = cols(rows(X))
        return X
    X = torch.exp(M)
    for _ in range(T):
        X = cols(rows(X))
    return X


def plain_torch(T, convention, eps):
    """What the torch rows run: the plain forward in float32 (half inputs cast in and out)."""
    def function(M):
        X = plain_forward(M.float() if M.dtype in HALF else M, T, convention, eps)
        return X.to(M.dtype)
    return function


def reference(M, G, T, convention, eps):
    """(R, dL/dM) in float64 by torch.autograd of the plain forward."""
    M64 = M.double().requires_grad_(True)
    R64 = plain_forward(M64, T, convention, eps)
    grad, = torch.autograd.grad(R64, M64, G.double())
    return R64.detach(), grad


def max_relerr(out, ref):
    k = ref.shape[0]
    diff = (out[:k].double() - ref).reshape(k, -1).norm(dim=1)
    rel = diff / ref.reshape(k, -1).norm(dim=1)
    return torch.nan_to_num(rel, nan=math.inf).max().item()


# ------------------------------------------------------------------ timing, memory

class Timer:
    def __init__(self, args):
        self.cuda = args.device == "cuda"
        self.args = args
        self.do_bench = None
        self.how = f"time.perf_counter, median of {args.repeats}"
        if self.cuda:
            try:
                from triton.testing import do_bench
                self.do_bench = do_bench
                self.how = (f"triton.testing.do_bench, median (warmup {args.warmup_ms:g} ms, "
                            f"rep {args.rep_ms:g} ms)")
            except Exception as error:  # no Triton: CUDA events
                self.how = f"CUDA events, median of {args.repeats} ({error})"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def ms(self, fn):
        if self.do_bench is not None:
            return self.do_bench(fn, warmup=self.args.warmup_ms, rep=self.args.rep_ms,
                                 return_mode="median")
        times = []
        warm = 3 if self.cuda else 1
        for i in range(warm + self.args.repeats):
            if self.cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                elapsed = start.elapsed_time(end)
            else:
                begin = time.perf_counter()
                fn()
                elapsed = 1e3 * (time.perf_counter() - begin)
            if i >= warm:
                times.append(elapsed)
        return statistics.median(times)


def copy_ceiling(timer, device):
    """GB/s of a device-to-device copy, read + write (1 GiB; 64 MiB on the cpu)."""
    size = (1 << 30) if device == "cuda" else (1 << 26)
    x = torch.ones(size // 4, device=device)
    y = torch.empty_like(x)
    return 2 * size / timer.ms(lambda: y.copy_(x)) / 1e6


def nbytes(t):
    return t.numel() * t.element_size()


# ------------------------------------------------------------------ methods

class Method:
    """forward() -> state; output(state) -> R as (B, n, n); backward(state) -> dL/dM.
    status(): a note on the solver statuses of one more forward + backward, or "".
    implicit: the gradient is the implicit one (also compared with the float64 implicit
    gradient). no_backward: why only the forward may run, or None."""

    def __init__(self, name, forward, backward, output=lambda s: s, status=None, note=""):
        self.name, self.forward, self.backward = name, forward, backward
        self.output, self.status, self.note = output, status, note
        self.implicit = False
        self.no_backward = None


class Unavailable(Exception):
    """A method that cannot run here: its row says why."""


def autograd_method(name, function, M, G, note=""):
    x = M.detach().requires_grad_(True)

    def backward(out):
        return torch.autograd.grad(out, x, G)[0]
    return Method(name, lambda: function(x), backward, note=note), x


def load_module(ctx, folder, module):
    if ctx.args.device != "cuda":
        raise Unavailable("Triton kernels need CUDA (--device cpu)")
    if not os.path.isdir(folder):
        raise Unavailable(f"{os.path.normpath(folder)} not found (--reference)")
    try:
        __import__("triton")
    except Exception as error:
        raise Unavailable(f"no Triton ({type(error).__name__}: {error})") from None
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return __import__(module)
    except Exception as error:
        raise Unavailable(f"{module} does not import ({type(error).__name__}: {error})") from None


def te_methods(ctx, M, G, T):
    """TransformerEngine, n = 4, rows_first: bare kernels (float32) and mHCSinkhornOp."""
    te_dir = os.path.join(ctx.args.reference, "te_mhc")
    kern = load_module(ctx, te_dir, "mhc_kernels")
    wrapper = load_module(ctx, te_dir, "te_sinkhorn")
    import triton
    B, n = M.shape[0], M.shape[-1]
    methods = []
    if M.dtype == torch.float32:
        x = M.view(B, n * n)
        Gv = G.view(B, n * n)
        grid = lambda META: (triton.cdiv(B * n * n, META["BLOCK_SIZE"]),)  # noqa: E731
        st = dict(stride_xm=n * n, stride_xn=1, stride_out_m=n * n, stride_out_n=1, M=B, n=n,
                  iters=T)
        stb = dict(stride_grad_out_m=n * n, stride_grad_out_n=1, stride_out_m=n * n,
                   stride_out_n=1, stride_grad_xm=n * n, stride_grad_xn=1, stride_xm=n * n,
                   stride_xn=1, M=B, n=n, iters=T)

        def history():
            return (torch.empty((T + 1, B, n), device=M.device, dtype=torch.float32),
                    torch.empty((T + 1, B, n), device=M.device, dtype=torch.float32))

        def fwd_stored():
            P = torch.empty_like(x)
            hist_f, hist_g = history()
            kern._mhc_sinkhorn_fwd_fused[grid](x_ptr=x, output_ptr=P, hist_f_ptr=hist_f,
                                               hist_g_ptr=hist_g, **st)
            return P, hist_f, hist_g

        def bwd_stored(state):
            P, hist_f, hist_g = state
            gx = torch.empty_like(x)
            kern._mhc_sinkhorn_bwd_fused[grid](grad_out_ptr=Gv, output_ptr=P, grad_x_ptr=gx,
                                               x_ptr=x, hist_f_ptr=hist_f, hist_g_ptr=hist_g,
                                               **stb)
            return gx.view(B, n, n)

        def fwd_recompute():
            P = torch.empty_like(x)
            kern._mhc_sinkhorn_fwd_fused_recompute[grid](x_ptr=x, output_ptr=P, **st)
            return P

        def bwd_recompute(P):
            hist_f, hist_g = history()
            gx = torch.empty_like(x)
            kern._mhc_sinkhorn_bwd_fused_recompute[grid](
                grad_out_ptr=Gv, output_ptr=P, grad_x_ptr=gx, x_ptr=x, hist_f_ptr=hist_f,
                hist_g_ptr=hist_g, **stb)
            return gx.view(B, n, n)

        methods.append(Method("TE kernels (stored hist)", fwd_stored, bwd_stored,
                              output=lambda s: s[0].view(B, n, n)))
        methods.append(Method("TE kernels (recompute)", fwd_recompute, bwd_recompute,
                              output=lambda s: s.view(B, n, n)))
    for recompute, label in ((False, "stored hist"), (True, "recompute")):
        def function(x, recompute=recompute):
            return wrapper.mhc_fused_sinkhorn(x.view(B, 1, n, n), n, recompute, T).view(B, n, n)
        methods.append(autograd_method(f"TE autograd ({label})", function, M, G)[0])
    return methods


def megatron_methods(ctx, M, G, T, eps):
    """Megatron-LM dev, tilekernels: bare kernels (grid B, buffers as its wrappers allocate
    them) and TritonFusedSinkhorn."""
    mod = load_module(ctx, os.path.join(ctx.args.reference, "megatron_mhc"),
                      "megatron_sinkhorn")
    B, n = M.shape[0], M.shape[-1]

    def fwd():
        out = torch.empty_like(M)
        M_init = torch.empty_like(M)
        mod._triton_sinkhorn_fwd_kernel[(B,)](M, out, M_init, B, eps, n, T)
        return out, M_init

    def bwd(state):
        _, M_init = state
        grad = torch.empty_like(G)
        ws_M = torch.empty(B * 2 * T * n * n, dtype=torch.float32, device=M.device)
        ws_rs = torch.empty(B * T * n, dtype=torch.float32, device=M.device)
        ws_cs = torch.empty(B * T * n, dtype=torch.float32, device=M.device)
        mod._triton_sinkhorn_bwd_kernel[(B,)](G, M_init, grad, ws_M, ws_rs, ws_cs, B, eps, n, T)
        return grad

    kernels = Method("Megatron kernels", fwd, bwd, output=lambda s: s[0])
    layer, _ = autograd_method("Megatron autograd",
                               lambda x: mod.triton_fused_sinkhorn(x, T, eps), M, G)
    if B * 2 * T * n * n > 2 ** 31 - 1:
        # The backward kernel's workspace offset pid * 2 T n^2 is int32 arithmetic in Triton:
        # past 2^31 it wraps and the kernel writes outside its workspace.
        for method in (kernels, layer):
            method.no_backward = (f"backward not run: B 2 T n^2 = {B * 2 * T * n * n:.2e} "
                                  "overflows the kernel's int32 workspace offsets")
    return [kernels, layer]


def sinkgrad_modules():
    try:
        import sinkgrad.torch as sgt
        from sinkgrad import _arguments, _kernels
    except Exception as error:
        raise Unavailable(f"sinkgrad.torch does not import ({type(error).__name__}: {error}; "
                          "PYTHONPATH=<build>/python)") from None
    return sgt, _arguments, _kernels


def status_note(counts):
    """'fallback 3' for the statuses other than ok, '' when all are ok."""
    return ", ".join(f"{name} {count}" for name, count in counts.items()
                     if count and name != "ok")


def layer_methods(ctx, M, G, T, convention, eps):
    sgt, _, _ = sinkgrad_modules()
    note = "bf16 computed in float32 by the layer" if M.dtype in HALF else ""
    methods = []
    for solver in SOLVERS:
        def function(x, solver=solver, stats=None):
            return sgt.sinkhorn(x, T, backward=solver, forward=convention, eps=eps, stats=stats)
        method, x = autograd_method(f"sinkgrad layer {solver}", function, M, G, note)
        method.implicit = solver != "unrolled"

        def status(function=function, x=x):
            stats = sgt.SolveStats()
            torch.autograd.grad(function(x, stats=stats), x, G)
            return status_note(stats.counts())
        method.status = status
        methods.append(method)
    return methods


def kernel_methods(ctx, M, G, T, convention, eps):
    _, arguments, kernels = sinkgrad_modules()
    spec = arguments.forward_convention(convention, eps)
    methods = []
    for solver in SOLVERS:
        def bwd(R, solver=solver):
            return kernels.solve(M, R, G, T, solver, "", spec)[0]

        def status(solver=solver):
            R = kernels.forward(M, T, spec)
            code = kernels.solve(M, R, G, T, solver, "", spec)[1]
            counts = torch.bincount(code.long(), minlength=len(kernels.STATUS_NAMES))
            return status_note(dict(zip(kernels.STATUS_NAMES, counts.tolist())))
        methods.append(Method(f"sinkgrad kernels {solver}",
                              lambda: kernels.forward(M, T, spec), bwd, status=status))
        methods[-1].implicit = solver != "unrolled"
    return methods


def torch_methods(ctx, M, G, T, convention, eps):
    return [autograd_method("torch autograd", plain_torch(T, convention, eps), M, G)[0]]


def compile_methods(ctx, M, G, T, convention, eps):
    if not hasattr(torch, "compile"):
        raise Unavailable(f"torch {torch.__version__} has no torch.compile (torch >= 2.0)")
    dynamo = importlib.import_module("torch._dynamo")
    key = (convention, M.shape[-1], M.dtype, T) + ((M.shape[0],) if ctx.args.compile_static
                                                   else ())
    if ctx.compiled_key != key:
        dynamo.reset()
        ctx.compiled_key = key
        ctx.compiled = torch.compile(plain_torch(T, convention, eps),
                                     dynamic=False if ctx.args.compile_static else None)
    compiled = ctx.compiled
    method, x = autograd_method("torch.compile", compiled, M, G)
    if not ctx.args.compile_static:
        dynamo.mark_dynamic(x, 0)
    return [method]


def methods_for(ctx, M, G, T, convention, eps):
    """[(name, factory)] of the group, in table order. A factory returns a list of Methods or
    raises Unavailable / any error (its rows then say so)."""
    wanted = ctx.args.methods
    out = []
    if convention == "rows_first" and "te" in wanted:
        te_names = (["TE kernels (stored hist)", "TE kernels (recompute)"]
                    if M.dtype == torch.float32 else []) + \
            ["TE autograd (stored hist)", "TE autograd (recompute)"]
        out.append((te_names, lambda: te_methods(ctx, M, G, T)))
    if convention == "tilekernels" and "megatron" in wanted:
        out.append((["Megatron kernels", "Megatron autograd"],
                    lambda: megatron_methods(ctx, M, G, T, eps)))
    if "layer" in wanted:
        out.append(([f"sinkgrad layer {s}" for s in SOLVERS],
                    lambda: layer_methods(ctx, M, G, T, convention, eps)))
    if "kernels" in wanted and M.dtype == torch.float32:
        out.append(([f"sinkgrad kernels {s}" for s in SOLVERS],
                    lambda: kernel_methods(ctx, M, G, T, convention, eps)))
    if "torch" in wanted:
        out.append((["torch autograd"], lambda: torch_methods(ctx, M, G, T, convention, eps)))
    if "compile" in wanted:
        out.append((["torch.compile"], lambda: compile_methods(ctx, M, G, T, convention, eps)))
    return out


# ------------------------------------------------------------------ one row

def error_text(error):
    text = str(error).strip()
    if isinstance(error, MemoryError) or "out of memory" in text.lower():
        return "oom"
    line = text.splitlines()[0] if text else ""
    return f"failed: {type(error).__name__}: {line}"[:200]


def measure(ctx, method, M, refs):
    """The row's numbers: warm-up, memory, errors, statuses, then the timings."""
    timer, cuda = ctx.timer, ctx.args.device == "cuda"
    B = M.shape[0]
    if method.no_backward:
        return measure_forward(ctx, method, M, refs)
    row = {}
    for _ in range(2):  # compiles, autotunes
        method.backward(method.forward())
    state, out = forward_kept(ctx, method, row)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    grad = method.backward(state)
    timer.sync()
    if cuda:
        row["bwd_scratch_bytes"] = torch.cuda.max_memory_allocated() - base - nbytes(grad)
    row["fwd_err"] = max_relerr(out, refs["R"])
    row["grad_err"] = max_relerr(grad, refs["grad"])
    if method.implicit and refs.get("implicit") is not None:
        row["grad_err_implicit"] = max_relerr(grad, refs["implicit"])
    del state, out, grad
    if method.status is not None:
        row["status"] = method.status()
    gc.collect()
    row["fwd_ms"] = timer.ms(method.forward)
    row["step_ms"] = timer.ms(lambda: method.backward(method.forward()))
    elements = B * M.shape[-1] ** 2 * M.element_size()
    row["fwd_of_copy"] = 2 * elements / row["fwd_ms"] / 1e6 / ctx.copy_gbs
    row["step_of_copy"] = 5 * elements / row["step_ms"] / 1e6 / ctx.copy_gbs
    return row


def forward_kept(ctx, method, row):
    """One forward after the warm-up: its state and output; on CUDA row["kept_bytes"], what the
    forward keeps for the backward beyond its output."""
    ctx.timer.sync()
    gc.collect()
    cuda = ctx.args.device == "cuda"
    if cuda:
        before = torch.cuda.memory_allocated()
    state = method.forward()
    out = method.output(state)
    ctx.timer.sync()
    if cuda:
        row["kept_bytes"] = torch.cuda.memory_allocated() - before - nbytes(out)
    return state, out


def measure_forward(ctx, method, M, refs):
    """A row whose backward cannot run: the forward's time, memory and error only."""
    timer = ctx.timer
    row = {"status": method.no_backward}
    for _ in range(2):
        method.forward()
    state, out = forward_kept(ctx, method, row)
    row["fwd_err"] = max_relerr(out, refs["R"])
    del state, out
    gc.collect()
    row["fwd_ms"] = timer.ms(method.forward)
    row["fwd_of_copy"] = (2 * M.numel() * M.element_size() / row["fwd_ms"] / 1e6
                          / ctx.copy_gbs)
    return row


def implicit_reference(M, G, T, convention, eps):
    """The float64 implicit gradient (sinkgrad's direct solver, a dense solve, in float64) of
    the same forward, or None where sinkgrad does not run."""
    try:
        sgt = sinkgrad_modules()[0]
        x = M.double().requires_grad_(True)
        R = sgt.sinkhorn(x, T, backward="direct", forward=convention, eps=eps,
                         on_failure="keep")
        return torch.autograd.grad(R, x, G.double())[0]
    except Exception:
        return None


def free_memory(cuda):
    gc.collect()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ------------------------------------------------------------------ output

LEGEND = """\
What each method keeps for its backward (documented; the kept column measures it):
- TE kernels (stored hist): _mhc_sinkhorn_fwd_fused + _mhc_sinkhorn_bwd_fused on float32; keeps
  P and the f/g history, 2 (T + 1) n float32 per matrix. (recompute): the _recompute pair;
  keeps P only, the backward recomputes the history into 2 (T + 1) n float32 of scratch.
- TE autograd: mhc_fused_sinkhorn(x, 4, recompute_hist, T) (mHCSinkhornOp): saves x and P in
  float32 (copies for bfloat16 inputs), plus the history when stored; clones grad_out.
- Megatron kernels / autograd: _triton_sinkhorn_fwd/bwd_kernel, grid B / TritonFusedSinkhorn:
  keeps M_init = exp(x - row max), n^2 in the input dtype; the backward reruns the forward
  into a 2 T n^2 + 2 T n float32 workspace (bwd scratch).
- sinkgrad layer: saves M and R in float32 (for float32 inputs the input and the output
  themselves). sinkgrad kernels: _kernels.forward / solve, reading M and R; float32 only.
- torch autograd: eager autograd keeps the intermediates of the T steps; torch.compile: what
  AOTAutograd / inductor save.
Only PyTorch's allocator is seen: scratch a library takes elsewhere (sinkgrad's cudaMallocAsync
list of the matrices its fallback replays) is not in the memory columns."""


def fmt_batch(B):
    e = B.bit_length() - 1
    return f"2^{e}" if B == 1 << e else str(B)


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def per_matrix(row, key):
    value = row.get(key)
    return None if value is None else value / row["B"]


def table(rows):
    lines = ["| method | convention | n | B | dtype | fwd ms | fwd+bwd ms | fwd of copy | "
             "fwd+bwd of copy | kept B/mat | bwd scratch B/mat | grad err | grad err implicit | "
             "note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['convention']} | {r['n']} | {fmt_batch(r['B'])} | "
            f"{r['dtype']} | {fmt(r.get('fwd_ms'), '.4f')} | {fmt(r.get('step_ms'), '.4f')} | "
            f"{fmt(r.get('fwd_of_copy'), '.3f')} | {fmt(r.get('step_of_copy'), '.3f')} | "
            f"{fmt(per_matrix(r, 'kept_bytes'), '.0f')} | "
            f"{fmt(per_matrix(r, 'bwd_scratch_bytes'), '.0f')} | "
            f"{fmt(r.get('grad_err'), '.1e')} | {fmt(r.get('grad_err_implicit'), '.1e')} | "
            f"{r.get('note', '')} |")
    return "\n".join(lines)


class Context:
    def __init__(self, args):
        self.args = args
        self.timer = Timer(args)
        self.copy_gbs = None
        self.compiled_key = None
        self.compiled = None


def header(ctx):
    args = ctx.args
    if args.device == "cuda":
        where = torch.cuda.get_device_name()
    else:
        where = f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} " \
                "threads)"
    try:
        import triton
        triton_version = triton.__version__
    except Exception:
        triton_version = "none"
    try:
        import sinkgrad
        sg = f"sinkgrad {getattr(sinkgrad, '__version__', '?')} from " \
             f"{os.path.dirname(sinkgrad.__file__)}"
    except Exception as error:
        sg = f"sinkgrad not importable ({error})"
    return (f"device: {where}; torch {torch.__version__}, triton {triton_version}; {sg}\n"
            f"T = {args.T}; timing: {ctx.timer.how}; copy ceiling {ctx.copy_gbs:.0f} GB/s "
            f"({'1 GiB' if args.device == 'cuda' else '64 MiB'} device-to-device copy, read + "
            f"write); errors against float64 autograd on the first {args.check} matrices")


def main():
    args = parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("side_by_side.py: no CUDA device (use --device cpu for the plumbing check)")
    ctx = Context(args)
    ctx.copy_gbs = copy_ceiling(ctx.timer, args.device)
    head = header(ctx)
    print(head, file=sys.stderr, flush=True)
    groups = []
    for convention in args.conventions:
        if convention == "rows_first":
            groups += [("rows_first", 4, 0.0)] if 4 in args.n else []
        elif convention == "tilekernels":
            groups += [("tilekernels", n, TILEKERNELS_EPS) for n in args.n]
        else:
            sys.exit(f"side_by_side.py: unknown convention {convention!r}")
    rows = []

    def save():
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"header": head, "copy_gbs": ctx.copy_gbs, "T": args.T,
                           "check": args.check, "rows": rows}, f, indent=1)
        if args.markdown:
            with open(args.markdown, "w", encoding="utf-8") as f:
                f.write(f"{head}\n\n{table(rows)}\n\n{LEGEND}\n")

    for dtype in args.dtypes:
        dtype_name = str(dtype).replace("torch.", "")
        for convention, n, eps in groups:
            for B in args.batches:
                base = dict(convention=convention, n=n, B=B, dtype=dtype_name)
                try:
                    gen = torch.Generator(device=args.device).manual_seed(args.seed + 1000 * n
                                                                           + B % 997)
                    M = (4 * torch.rand(B, n, n, device=args.device, generator=gen)).to(dtype)
                    G = torch.randn(B, n, n, device=args.device, generator=gen).to(dtype)
                    k = min(args.check, B)
                    refs = dict(zip(("R", "grad"),
                                    reference(M[:k], G[:k], args.T, convention, eps)))
                    refs["implicit"] = implicit_reference(M[:k], G[:k], args.T, convention, eps)
                except Exception as error:
                    rows.append(dict(base, method="(inputs)", note=error_text(error)))
                    traceback.print_exc(limit=3)
                    free_memory(cuda)
                    continue
                for names, factory in methods_for(ctx, M, G, args.T, convention, eps):
                    try:
                        methods = factory()
                    except Unavailable as error:
                        methods = [None] * len(names)
                        failure = f"not available: {error}"
                    except Exception as error:
                        methods = [None] * len(names)
                        failure = error_text(error)
                        traceback.print_exc(limit=3)
                    for name, method in zip(names, methods):
                        row = dict(base, method=name)
                        if method is None:
                            row["note"] = failure
                        else:
                            begin = time.time()
                            try:
                                row.update(measure(ctx, method, M, refs))
                                row["note"] = "; ".join(t for t in (method.note,
                                                                    row.get("status", "")) if t)
                            except Exception as error:
                                row["note"] = error_text(error)
                                if row["note"] != "oom":
                                    traceback.print_exc(limit=3)
                                if name == "torch.compile":
                                    ctx.compiled_key = None
                            row["seconds"] = round(time.time() - begin, 2)
                            del method
                        rows.append(row)
                        print(f"[{len(rows)}] {name}, {convention}, n={n}, B={fmt_batch(B)}, "
                              f"{dtype_name}: fwd+bwd {fmt(row.get('step_ms'), '.4f')} ms, "
                              f"grad err {fmt(row.get('grad_err'), '.1e')} {row['note']} "
                              f"({row.get('seconds', 0):.1f} s)", file=sys.stderr, flush=True)
                        save()
                        free_memory(cuda)
                    del methods
                del M, G, refs
                free_memory(cuda)
    print(f"{head}\n\n{table(rows)}\n\n{LEGEND}")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
