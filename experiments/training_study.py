#!/usr/bin/env python3
"""Does a non-converged implicit gradient train as well as the exact one? A small mHC-style
character-level language model trained with sinkgrad's PyTorch layer, once per backward solver,
Sinkhorn iteration count T, forward convention and seed, logged to HDF5.

    PYTHONPATH=build/python python3 experiments/training_study.py --output training.h5 --resume
    PYTHONPATH=build/python python3 experiments/training_study.py --smoke --output smoke.h5
    python3 experiments/plot_training.py training.h5 --out-dir docs/results

The model (docs/results.md, "Training with a non-converged backward"): a residual stack whose
hidden state holds n parallel streams of width d. Every sublayer (causal self-attention, MLP)
is wrapped as in manifold-constrained hyper-connections (mHC): from the token's n*d state it
computes per token pre and post weights and the logits of an n x n mixing matrix
R = Sinkhorn_T(logits), and the streams become R x + post * F(pre . x). So every step has
(batch x context) tokens x (2 * blocks) sublayers Sinkhorn matrices, all through
sgt.sinkhorn with the backward under study. The task: next-character prediction on the GPL-3
text that every Debian system ships (/usr/share/common-licenses/GPL-3); its last tenth is held
out for the evaluation loss.

Per run the log holds the training loss of every step, the evaluation loss every
--eval-every steps, the per-matrix status counts of every step's backward, the time of every
step and of its backward, and on every --measure-every-th step the parameter gradient's cosine
similarity and relative error against the unrolled backward's on the same batch and weights
(a second forward and backward), and the peak memory the backward allocated. The schema is
in docs/experiments.md.

Failed matrices: --on-failure (default unrolled) is passed to the layer: a matrix whose
solve did not report ok is recomputed by the unrolled solver, and the status counts logged
(the first solver's) show how often. With keep it keeps what the solver wrote (NaN after a CG
breakdown, or the last CG iterate); when that makes a parameter gradient non-finite the
optimiser step is skipped, as a loss-scaling trainer does, and the run counts it
(skipped_steps).

Resuming: every run is written when it is complete (its group gets complete = 1 last) and the
file is closed between runs. --resume keeps the complete runs and runs the missing ones only;
the log must come from the same study (its settings, attribute study). SIGINT or SIGTERM
finishes and writes the run in progress, then exits with 130; a second one stops at once.
"""
import argparse
import datetime
import hashlib
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from system_python import require_modules  # noqa: E402

os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # the profiler's allocator warnings
os.environ.setdefault("GLOG_minloglevel", "2")
require_modules(("h5py", "numpy", "torch"), "python3-torch python3-h5py python3-numpy")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

try:
    import sinkgrad.torch as sgt  # noqa: E402
except ImportError as error:
    sys.exit(f"training_study.py: {error}; run with PYTHONPATH=build/python after a build")

SCHEMA = "sinkgrad-training-log"
SCHEMA_VERSION = 1
DATA = "/usr/share/common-licenses/GPL-3"
BACKWARDS = ["unrolled", "cg_corrected", "cg_plain", "direct"]
TS = [1, 2, 3, 5, 10, 20]
FORWARDS = ["columns_first", "rows_first", "tilekernels"]
EPS = {"columns_first": 0.0, "rows_first": 0.0, "tilekernels": 1e-6}  # FORWARDS.md defaults
STATUS_NAMES = list(sgt.STATUS_NAMES)

# The sweep and model of each preset; any option given on the command line replaces its value.
PRESETS = {
    "cpu": dict(backwards=BACKWARDS, T=TS, forwards=FORWARDS, seeds=[0, 1, 2], steps=60,
                eval_every=15, measure_every=10, batch=16, context=32, n=4, d=32, blocks=1,
                heads=2, lr=1e-2, eval_windows=64),
    "cuda": dict(backwards=BACKWARDS, T=TS, forwards=FORWARDS, seeds=[0, 1, 2], steps=2000,
                 eval_every=100, measure_every=50, batch=64, context=128, n=4, d=64, blocks=4,
                 heads=4, lr=1e-3, eval_windows=256),
    "smoke": dict(backwards=BACKWARDS, T=TS, forwards=["columns_first"], seeds=[0], steps=4,
                  eval_every=2, measure_every=2, batch=4, context=16, n=4, d=16, blocks=1,
                  heads=2, lr=1e-2, eval_windows=8),
}
LIST_KEYS = ("backwards", "T", "forwards", "seeds")
INT_KEYS = ("steps", "eval_every", "measure_every", "batch", "context", "n", "d", "blocks",
            "heads", "eval_windows")

RUN_DESCRIPTIONS = {
    "key": ("the run's parameters, e.g. 'backward=cg_plain T=5 forward=rows_first eps=0 seed=1'",
            ""),
    "backward": ("the sinkhorn layer's backward solver", ""),
    "T": ("Sinkhorn iterations of the forward", "iterations"),
    "forward": ("forward convention (docs/math.md)", ""),
    "eps": ("the forward convention's additive epsilon", ""),
    "seed": ("seeds the weights' initialisation and the order of the training batches", ""),
    "device": ("cpu or cuda", ""),
    "on_failure": ("the layer's on_failure policy", ""),
    "parameters": ("number of trainable parameters", ""),
    "matrices_per_step": ("Sinkhorn matrices per training step (tokens x sublayers)",
                          "matrices"),
    "started": ("start of the run", "ISO 8601 UTC"),
    "process": ("host:pid of the process that computed the run", ""),
    "wall_seconds": ("the whole run, evaluations and gradient measurements included", "s"),
    "final_train_loss": ("mean training loss of the last eval_every steps", "nats/char"),
    "final_eval_loss": ("evaluation loss after the last step", "nats/char"),
    "skipped_steps": ("steps whose optimiser update was skipped (non-finite gradient)", ""),
    "status_counts": ("int64[5] matrices per status over all steps' backwards", "matrices"),
    "status_names": ("names of status_counts' entries", ""),
    "step_seconds_median": ("median time of a step not measured (forward, backward, update)",
                            "s"),
    "backward_seconds_median": ("median time of the backward of a step not measured", "s"),
    "backward_peak_bytes": ("largest peak memory allocated by a measured step's backward",
                            "bytes"),
    "complete": ("1 once the run is fully written (a run without it is removed on --resume)",
                 ""),
}
DATASETS = {
    "train_loss": ("training loss of each step's batch", "nats/char"),
    "step_seconds": ("forward, backward and update of each step (measured steps also include "
                     "the reference gradient and profiling)", "s"),
    "backward_seconds": ("the backward of each step", "s"),
    "measured": ("1 for a step whose gradient was compared and memory profiled", ""),
    "skipped": ("1 for a step whose update was skipped (non-finite gradient)", ""),
    "status_counts": ("(steps, 5) matrices per status in each step's backward", "matrices"),
    "eval_step": ("steps after which the evaluation loss was computed (0: before training)",
                  ""),
    "eval_loss": ("evaluation loss on the held-out text", "nats/char"),
    "measured_step": ("the steps at which the gradient was compared", ""),
    "grad_cosine": ("cosine similarity of the parameter gradient with the unrolled backward's "
                    "on the same batch and weights", ""),
    "grad_rel_error": ("||g - g_unrolled|| / ||g_unrolled|| over all parameters", "relative"),
    "backward_peak_bytes": ("peak memory allocated during the backward above what was "
                            "allocated before it (cpu: what PyTorch's allocator sees)", "bytes"),
}
ROOT_DESCRIPTIONS = {
    "schema": ("'sinkgrad-training-log'", ""),
    "schema_version": ("version of this layout", ""),
    "tool_version": ("git commit of the sources that wrote the log, if known", ""),
    "study": ("the settings but the sweep, one key=value a line (--resume compares them)", ""),
    "sweep": ("the lists backwards, T, forwards, seeds of every command that wrote the log",
              ""),
    "command": ("the command line that created the log", ""),
    "resumed": ("one line per --resume: time, tool version, command line", ""),
    "started": ("creation of the log", "ISO 8601 UTC"),
    "host": ("host name", ""),
    "devices": ("the devices and threads", ""),
    "data": ("path of the text", ""),
    "data_sha256": ("SHA-256 of the text", ""),
    "vocabulary": ("the characters of the text, in token order (UTF-8 bytes as latin-1)", ""),
    "train_chars": ("characters of the training part (the first nine tenths)", ""),
    "eval_chars": ("characters of the held-out part (the last tenth)", ""),
}


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fnv1a(text):
    """16 hex digits of the 64-bit FNV-1a hash, as the study log names its runs."""
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def run_key(backward, T, forward, seed):
    return f"backward={backward} T={T} forward={forward} eps={EPS[forward]:g} seed={seed}"


# ------------------------------------------------------------------------------- the model

class RMSNorm(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(nn.Module):
    """Causal multi-head self-attention with a pre-norm."""

    def __init__(self, d, heads):
        super().__init__()
        self.norm, self.heads = RMSNorm(d), heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        B, L, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(B, L, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, heads, L, d/heads)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(causal, float("-inf")).softmax(-1)
        return self.out((weights @ v).transpose(1, 2).reshape(B, L, d))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(RMSNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return self.net(x)


class HyperConnection(nn.Module):
    """One sublayer F wrapped as mHC does: from the normalised n*d state of each token,
    pre = sigmoid(a_pre * x W_pre + b_pre), post = 2 sigmoid(a_post * x W_post + b_post) and
    R = Sinkhorn_T(a_res * x W_res + b_res); the streams become R x + post F(pre . x).
    b_res starts as data/logits.h5's mhc_like_n4, 2 I + N(0, 0.5^2): identity-dominant, and
    not doubly stochastic after one normalisation as exp(2 I) would be, so T matters."""

    def __init__(self, n, d, sublayer, sinkhorn):
        super().__init__()
        self.n, self.sublayer, self.sinkhorn = n, sublayer, sinkhorn
        self.norm = RMSNorm(n * d)
        self.project = nn.Linear(n * d, 2 * n + n * n, bias=False)
        self.scale = nn.Parameter(torch.full((3,), 0.01))  # a_pre, a_post, a_res
        self.b_pre = nn.Parameter(torch.zeros(n))
        self.b_post = nn.Parameter(torch.zeros(n))
        self.b_res = nn.Parameter(2.0 * torch.eye(n) + 0.5 * torch.randn(n, n))
        self.stats = sgt.SolveStats()

    def forward(self, x):  # x: (B, L, n, d)
        B, L, n, d = x.shape
        h = self.project(self.norm(x.reshape(B, L, n * d)))
        pre = torch.sigmoid(self.scale[0] * h[..., :n] + self.b_pre)
        post = 2 * torch.sigmoid(self.scale[1] * h[..., n:2 * n] + self.b_post)
        logits = self.scale[2] * h[..., 2 * n:].reshape(B, L, n, n) + self.b_res
        R = self.sinkhorn(logits, self.stats)
        out = self.sublayer(torch.einsum("bln,blnd->bld", pre, x))
        return R @ x + post.unsqueeze(-1) * out.unsqueeze(-2)


class StreamLM(nn.Module):
    """Character-level language model: embedding copied into n streams, `blocks` x (attention,
    MLP) each wrapped by a HyperConnection, then the streams' mean to the logits."""

    def __init__(self, vocabulary, context, n, d, blocks, heads, sinkhorn, stream_offsets):
        super().__init__()
        self.n = n
        self.embed = nn.Embedding(vocabulary, d)
        self.position = nn.Parameter(0.02 * torch.randn(context, d))
        # See forward(); without offsets the streams are exact copies, as mHC expands them.
        self.stream = nn.Parameter(torch.randn(n, d) if stream_offsets else torch.zeros(n, d),
                                   requires_grad=bool(stream_offsets))
        layers = []
        for _ in range(blocks):
            layers += [HyperConnection(n, d, Attention(d, heads), sinkhorn),
                       HyperConnection(n, d, MLP(d), sinkhorn)]
        self.layers = nn.ModuleList(layers)
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocabulary)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[:tokens.shape[1]]
        # n copies of the embedding, each plus its own learned offset: with exact copies
        # dL/dR = (dL/dy) x^T has equal columns, the gradient w.r.t. the logits is zero up to
        # rounding and the CG backwards fail on it (docs/results.md).
        x = x.unsqueeze(2) + self.stream
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x.mean(2)))

    def status_counts(self):
        """Matrices per status in the last backward, summed over the sublayers."""
        counts = np.zeros(len(STATUS_NAMES), dtype=np.int64)
        for layer in self.layers:
            if layer.stats.status is not None:
                counts += np.array(list(layer.stats.counts().values()), dtype=np.int64)
        return counts


class Sinkhorn:
    """The layer call every HyperConnection makes; `backward` can be switched between calls
    (the reference gradient of a measured step is the same model with backward = unrolled)."""

    def __init__(self, T, backward, forward, on_failure):
        self.T, self.backward, self.forward, self.on_failure = T, backward, forward, on_failure

    def __call__(self, logits, stats):
        return sgt.sinkhorn(logits, self.T, backward=self.backward, forward=self.forward,
                            eps=EPS[self.forward], stats=stats, on_failure=self.on_failure)


# -------------------------------------------------------------------------------- the data

class Text:
    def __init__(self, path, context, eval_windows):
        with open(path, "rb") as f:
            raw = f.read()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.vocabulary = bytes(sorted(set(raw)))
        lookup = np.zeros(256, dtype=np.int64)
        lookup[np.frombuffer(self.vocabulary, dtype=np.uint8)] = np.arange(len(self.vocabulary))
        tokens = torch.from_numpy(lookup[np.frombuffer(raw, dtype=np.uint8)])
        split = len(tokens) * 9 // 10
        self.train, self.held_out = tokens[:split], tokens[split:]
        self.context = context
        if len(self.held_out) < context + 2:
            raise SystemExit(f"training_study.py: {path} is too short for context {context}")
        starts = np.linspace(0, len(self.held_out) - context - 1, eval_windows).astype(np.int64)
        self.eval_batch = self.windows(self.held_out, torch.from_numpy(starts))

    def windows(self, tokens, starts):
        index = starts[:, None] + torch.arange(self.context + 1)
        chunk = tokens[index]
        return chunk[:, :-1], chunk[:, 1:]

    def batches(self, seed, batch, steps):
        """The training batches of one seed: the same for every backward, T and convention."""
        generator = torch.Generator().manual_seed(1_000_003 * seed + 17)
        for _ in range(steps):
            starts = torch.randint(0, len(self.train) - self.context - 1, (batch,),
                                   generator=generator)
            yield self.windows(self.train, starts)


# -------------------------------------------------------------------------------- one run

def flat_grad(grads):
    return torch.cat([g.reshape(-1).double() for g in grads])


def agreement(g, reference):
    """(cosine, relative error) of g against reference; exactly (1, 0) when they are equal."""
    if torch.equal(g, reference):
        return 1.0, 0.0
    norm = reference.norm()
    cosine = float(g @ reference / (g.norm() * norm))
    return cosine, float((g - reference).norm() / norm)


def cpu_memory_events(work):
    """Runs work() under PyTorch's profiler with memory events; returns (time, bytes) of every
    cpu allocation (+) and release (-) it saw. The profiler's own low-level entry points are
    used where they exist (torch 1.13 to 2.x): the public one spends seconds building its
    tables on every call."""
    from torch.profiler import ProfilerActivity
    activities = {ProfilerActivity.CPU}
    try:
        from torch.autograd import (ProfilerConfig, ProfilerState, _disable_profiler,
                                    _enable_profiler, _prepare_profiler)
        config = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False,
                                torch._C._profiler._ExperimentalConfig())
        _prepare_profiler(config, activities)
    except (ImportError, TypeError, AttributeError):
        with torch.profiler.profile(activities=list(activities), profile_memory=True) as prof:
            work()
        events = prof.profiler.kineto_results.events()
    else:
        _enable_profiler(config, activities)
        try:
            work()
        finally:
            events = _disable_profiler().events()
    # torch >= 2.x names the start time in nanoseconds (start_ns), 1.13 in microseconds.
    start = "start_ns" if events and hasattr(events[0], "start_ns") else "start_us"
    return [(getattr(e, start)(), e.nbytes()) for e in events
            if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]


def peak_backward_bytes(loss, device):
    """Runs loss.backward() and returns the peak memory it allocated above what was allocated
    when it started: CUDA from the caching allocator's statistics, cpu from the allocation
    events of PyTorch's profiler (the library's own scratch on the cpu is not seen)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        loss.backward()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    events = cpu_memory_events(loss.backward)
    events.sort(key=lambda e: e[0])
    running = peak = 0
    for _, nbytes in events:
        running += nbytes
        peak = max(peak, running)
    return peak


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_run(settings, text, device, backward, T, forward, seed, on_failure):
    """Trains one model; returns (attributes, datasets)."""
    started, clock = now(), time.perf_counter()
    sinkhorn = Sinkhorn(T, backward, forward, on_failure)
    torch.manual_seed(seed)
    model = StreamLM(len(text.vocabulary), settings["context"], settings["n"], settings["d"],
                     settings["blocks"], settings["heads"], sinkhorn,
                     settings["stream_offsets"]).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=settings["lr"], weight_decay=0.0)
    steps, eval_every = settings["steps"], settings["eval_every"]
    eval_inputs, eval_targets = (t.to(device) for t in text.eval_batch)

    def evaluate():
        model.eval()
        with torch.no_grad():
            out = model(eval_inputs)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), eval_targets.reshape(-1))
        model.train()
        return float(loss)

    record = {name: [] for name in ("train_loss", "step_seconds", "backward_seconds",
                                    "measured", "skipped", "status_counts", "measured_step",
                                    "grad_cosine", "grad_rel_error", "backward_peak_bytes")}
    eval_step, eval_loss = [0], [evaluate()]
    for step, (inputs, targets) in enumerate(text.batches(seed, settings["batch"], steps), 1):
        inputs, targets = inputs.to(device), targets.to(device)
        measured = step % settings["measure_every"] == 0 or step == 1
        synchronize(device)
        begin = time.perf_counter()
        optimiser.zero_grad(set_to_none=True)
        out = model(inputs)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        synchronize(device)
        backward_begin = time.perf_counter()
        if measured:
            record["backward_peak_bytes"].append(peak_backward_bytes(loss, device))
        else:
            loss.backward()
        synchronize(device)
        backward_seconds = time.perf_counter() - backward_begin
        record["status_counts"].append(model.status_counts())
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        if measured:
            # The exact gradient of the same forward: the same weights and batch, unrolled.
            sinkhorn.backward = "unrolled"
            out_ref = model(inputs)
            loss_ref = F.cross_entropy(out_ref.reshape(-1, out_ref.shape[-1]),
                                       targets.reshape(-1))
            reference = torch.autograd.grad(loss_ref, params, allow_unused=True)
            reference = [r if r is not None else torch.zeros_like(p)
                         for r, p in zip(reference, params)]
            sinkhorn.backward = backward
            cosine, rel = agreement(flat_grad(grads), flat_grad(reference))
            record["measured_step"].append(step)
            record["grad_cosine"].append(cosine)
            record["grad_rel_error"].append(rel)
        finite = all(bool(torch.isfinite(g).all()) for g in grads)
        if finite:
            optimiser.step()
        synchronize(device)
        record["step_seconds"].append(time.perf_counter() - begin)
        record["backward_seconds"].append(backward_seconds)
        record["train_loss"].append(float(loss))
        record["measured"].append(int(measured))
        record["skipped"].append(int(not finite))
        if step % eval_every == 0 or step == steps:
            eval_step.append(step)
            eval_loss.append(evaluate())

    measured = np.array(record["measured"], dtype=bool)
    timed = ~measured if (~measured).any() else measured
    status = np.array(record["status_counts"], dtype=np.int64).reshape(-1, len(STATUS_NAMES))
    tokens = settings["batch"] * settings["context"]
    attrs = dict(
        key=run_key(backward, T, forward, seed), backward=backward, T=T, forward=forward,
        eps=EPS[forward], seed=seed, device=device.type, on_failure=on_failure,
        parameters=sum(p.numel() for p in params), matrices_per_step=tokens * len(model.layers),
        started=started, process=f"{socket.gethostname()}:{os.getpid()}",
        final_train_loss=float(np.mean(record["train_loss"][-eval_every:])),
        final_eval_loss=eval_loss[-1], skipped_steps=int(np.sum(record["skipped"])),
        status_counts=status.sum(0), status_names=",".join(STATUS_NAMES),
        step_seconds_median=float(np.median(np.array(record["step_seconds"])[timed])),
        backward_seconds_median=float(np.median(np.array(record["backward_seconds"])[timed])),
        backward_peak_bytes=int(max(record["backward_peak_bytes"])))
    data = dict(
        train_loss=np.array(record["train_loss"]), step_seconds=np.array(record["step_seconds"]),
        backward_seconds=np.array(record["backward_seconds"]),
        measured=np.array(record["measured"], dtype=np.int8),
        skipped=np.array(record["skipped"], dtype=np.int8), status_counts=status,
        eval_step=np.array(eval_step, dtype=np.int64), eval_loss=np.array(eval_loss),
        measured_step=np.array(record["measured_step"], dtype=np.int64),
        grad_cosine=np.array(record["grad_cosine"]),
        grad_rel_error=np.array(record["grad_rel_error"]),
        backward_peak_bytes=np.array(record["backward_peak_bytes"], dtype=np.int64))
    attrs["wall_seconds"] = time.perf_counter() - clock
    return attrs, data


# -------------------------------------------------------------------------------- the log

def study_text(settings, keys=None):
    """The settings (all but the sweep's lists, or only `keys`) as the canonical text stored
    in the log: --resume compares the settings, and extends the sweep."""
    lines = []
    for key in sorted(k for k in settings if (k in keys if keys else k not in LIST_KEYS)):
        value = settings[key]
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def first_difference(logged, current):
    old = dict(line.split("=", 1) for line in logged.splitlines() if line)
    new = dict(line.split("=", 1) for line in current.splitlines() if line)
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return f"{key}: {old.get(key, '(absent)')!r} in the log, {new.get(key, '(absent)')!r} now"
    return ""


def write_descriptions(log):
    group = log.require_group("descriptions")
    for kind, table, where in (("root", ROOT_DESCRIPTIONS, "/"),
                               ("runs", RUN_DESCRIPTIONS, "/runs/run_<16 hex>")):
        sub = group.require_group(kind)
        sub.attrs["where"] = where
        for name, (description, unit) in table.items():
            sub.attrs[name] = description
            sub.attrs[name + ".unit"] = unit


def source_version():
    """The git commit of the sources (with '-dirty' when they differ from it), else ''."""
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit + ("-dirty" if commit and dirty else "")


def devices_text(device):
    text = f"cpu ({torch.get_num_threads()} threads)"
    if device.type == "cuda":
        text += f"; cuda: {torch.cuda.get_device_name(device)}"
    return text


def open_log(path, settings, text, device, resume):
    """Creates the log, or with resume checks it and removes incomplete runs. Returns the set
    of complete run keys."""
    study = study_text(settings)
    if os.path.exists(path):
        if not resume:
            raise SystemExit(f"training_study.py: the log '{path}' exists; pass --resume to "
                             "complete it, or give another --output")
        try:
            log = h5py.File(path, "a")
        except OSError as error:
            raise SystemExit(f"training_study.py: cannot open '{path}': {error}") from None
        with log:
            if log.attrs.get("schema") != SCHEMA:
                raise SystemExit(f"training_study.py: '{path}' is not a {SCHEMA} log; give "
                                 "another --output")
            difference = first_difference(log.attrs["study"], study)
            if difference:
                raise SystemExit(f"training_study.py: '{path}' was made from a different "
                                 f"study: {difference}; resume only with the same settings, "
                                 "or give another --output")
            # Other sweep lists only add runs: the log's sweep becomes the union.
            logged = dict(line.split("=", 1) for line in log.attrs["sweep"].splitlines())
            union = {key: list(dict.fromkeys(logged[key].split(",") +
                                             [str(v) for v in settings[key]]))
                     for key in LIST_KEYS}
            log.attrs["sweep"] = study_text(union, LIST_KEYS)
            log.attrs["resumed"] += f"{now()} {source_version()} {' '.join(sys.argv)}\n"
            runs = log.require_group("runs")
            for name in list(runs):
                if int(runs[name].attrs.get("complete", 0)) != 1:
                    del runs[name]
            return {runs[name].attrs["key"] for name in runs}
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise SystemExit(f"training_study.py: the directory of '{path}' does not exist")
    with h5py.File(path, "w") as log:
        log.attrs.update(dict(
            schema=SCHEMA, schema_version=SCHEMA_VERSION, tool_version=source_version(),
            study=study, sweep=study_text(settings, LIST_KEYS), command=" ".join(sys.argv),
            resumed="", started=now(),
            host=socket.gethostname(), devices=devices_text(device), data=settings["data"],
            data_sha256=text.sha256, vocabulary=text.vocabulary.decode("latin-1"),
            train_chars=len(text.train), eval_chars=len(text.held_out)))
        log.create_group("runs")
        write_descriptions(log)
    return set()


def write_run(path, attrs, data):
    """Writes one complete run and closes the file, so that a kill between runs leaves a
    readable log; complete = 1 is written last."""
    with h5py.File(path, "a") as log:
        group = log["runs"].create_group("run_" + fnv1a(attrs["key"]))
        for name, value in attrs.items():
            group.attrs[name] = value
        for name, values in data.items():
            dataset = group.create_dataset(name, data=values)
            dataset.attrs["description"], dataset.attrs["unit"] = DATASETS[name]
        group.attrs["complete"] = 1


# -------------------------------------------------------------------------------- the sweep

def parse_list(kind, allowed=None):
    def parse(value):
        items = [kind(v.strip()) for v in value.split(",") if v.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        if allowed is not None:
            for item in items:
                if item not in allowed:
                    raise argparse.ArgumentTypeError(f"{item!r} is not one of "
                                                     f"{', '.join(map(str, allowed))}")
        return items
    return parse


def positive_int(value):
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return number


def arguments(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Presets (--device cpu, --device cuda, --smoke) set every value below that is "
               "not given; docs/results.md has the study's command.")
    parser.add_argument("--output", "-o", required=True, help="the HDF5 log")
    parser.add_argument("--resume", action="store_true",
                        help="complete an existing log: run only the runs it lacks")
    parser.add_argument("--smoke", action="store_true",
                        help="a few steps of every backward and T, one seed, columns_first")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch.set_num_threads (default 1)")
    parser.add_argument("--on-failure", default="unrolled", choices=list(sgt.ON_FAILURE),
                        help="the layer's on_failure (default keep: failures show, and a step "
                             "with a non-finite gradient is skipped)")
    parser.add_argument("--data", default=DATA, help=f"the text (default {DATA})")
    parser.add_argument("--backwards", type=parse_list(str))
    parser.add_argument("--T", type=parse_list(int))
    parser.add_argument("--forwards", type=parse_list(str, FORWARDS))
    parser.add_argument("--seeds", type=parse_list(int))
    for key in INT_KEYS:
        parser.add_argument("--" + key.replace("_", "-"), type=positive_int)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--no-stream-offsets", action="store_true",
                        help="start the n streams as exact copies of the embedding, as mHC "
                             "does (the CG backwards then fail on most matrices)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    settings = dict(PRESETS["smoke" if args.smoke else args.device])
    for key in LIST_KEYS + INT_KEYS + ("lr",):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    settings.update(device=args.device, on_failure=args.on_failure, data=args.data,
                    dtype="float32", stream_offsets=int(not args.no_stream_offsets))
    if settings["d"] % settings["heads"]:
        parser.error(f"--d {settings['d']} is not a multiple of --heads {settings['heads']}")
    if any(T < 1 for T in settings["T"]):
        parser.error("every T must be >= 1")
    missing = [f for f in settings["forwards"] if f not in sgt.FORWARDS]
    if missing:
        parser.error(f"this sinkgrad.torch runs only the forwards {', '.join(sgt.FORWARDS)}; "
                     f"not {', '.join(missing)}")
    return args, settings


class Interrupt:
    """The first SIGINT/SIGTERM asks the sweep to stop after the run in progress; a second one
    stops at once."""

    def __init__(self):
        self.requested = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.handle)

    def handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("training_study.py: interrupted; finishing the run in progress (again to stop "
              "at once)", file=sys.stderr, flush=True)


def main(argv=None):
    args, settings = arguments(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("training_study.py: --device cuda but torch sees no GPU")
    for backward in settings["backwards"]:
        try:
            sgt.sinkhorn(torch.zeros(1, 2, 2, device=device), 1, backward=backward)
        except ValueError as error:
            raise SystemExit(f"training_study.py: backward {backward!r}: {error}") from None
    if not os.path.isfile(settings["data"]):
        raise SystemExit(f"training_study.py: the text '{settings['data']}' is missing")
    text = Text(settings["data"], settings["context"], settings["eval_windows"])
    done = open_log(args.output, settings, text, device, args.resume)
    sweep = [(b, T, f, s) for f in settings["forwards"] for T in settings["T"]
             for b in settings["backwards"] for s in settings["seeds"]]
    todo = [run for run in sweep if run_key(*run) not in done]
    if not args.quiet:
        print(f"training_study.py: {len(sweep)} runs, {len(sweep) - len(todo)} already in "
              f"'{args.output}', {len(todo)} to run", file=sys.stderr, flush=True)
    interrupt = Interrupt()
    clock = time.perf_counter()
    for k, (backward, T, forward, seed) in enumerate(todo, 1):
        attrs, data = train_run(settings, text, device, backward, T, forward, seed,
                                args.on_failure)
        write_run(args.output, attrs, data)
        if not args.quiet:
            elapsed = time.perf_counter() - clock
            print(f"training_study.py: [{k}/{len(todo)}] {attrs['key']}: eval loss "
                  f"{attrs['final_eval_loss']:.4f}, {attrs['wall_seconds']:.1f} s "
                  f"(elapsed {elapsed:.0f} s, eta {elapsed / k * (len(todo) - k):.0f} s)",
                  file=sys.stderr, flush=True)
        if interrupt.requested and k < len(todo):
            print(f"training_study.py: stopped after {k} runs; --resume completes the log",
                  file=sys.stderr, flush=True)
            return 130
    print(f"training_study.py: {args.output}: {len(sweep)} runs complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
