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

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

try:
    import sinkgrad.torch as sgt  # noqa: E402
except ImportError as error:
    sys.exit(f"training_study.py: {error}; run with PYTHONPATH=build/python after a build")

from training_log import LIST_KEYS, now, open_log, write_run  # noqa: E402
from training_model import EPS, STATUS_NAMES, Sinkhorn, StreamLM, Text  # noqa: E402

DATA = "/usr/share/common-licenses/GPL-3"
BACKWARDS = ["unrolled", "cg_corrected", "cg_plain", "direct"]
TS = [1, 2, 3, 5, 10, 20]
FORWARDS = ["columns_first", "rows_first", "tilekernels"]

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
INT_KEYS = ("steps", "eval_every", "measure_every", "batch", "context", "n", "d", "blocks",
            "heads", "eval_windows")

def run_key(backward, T, forward, seed):
    return f"backward={backward} T={T} forward={forward} eps={EPS[forward]:g} seed={seed}"


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
