"""One run of training/training_study.py: the model trained for a number of steps with one
backward, T, forward convention and seed. The hot loop keeps every per-step number on the
device (losses, status counts, skipped flags; CUDA events for the step times) and reads them
once at the end; evaluations and measured steps (training_step.measure) run between steps."""
import os
import socket
import time

import numpy as np
import torch

from training_data import VOCABULARY
from training_log import now
from training_mixing import EPS, STATUS_NAMES, Mixing
from training_model import StreamLM
from training_step import WARMUP, Stepper, batch_loss, measure

MEASURED = ("grad_cosine", "grad_rel_error", "sinkhorn_share", "logits_grad_norm",
            "logits_grad_invariant_norm", "logit_spread", "logit_drift", "backward_seconds",
            "backward_peak_bytes")


def run_key(backward, T, forward, seed):
    return f"backward={backward} T={T} forward={forward} eps={EPS[forward]:g} seed={seed}"


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


def peak_backward_bytes(work, device):
    """Runs work() (a backward) and returns the peak memory it allocated above what was allocated
    when it started: CUDA from the caching allocator's statistics, cpu from the allocation
    events of PyTorch's profiler (the library's own scratch on the cpu is not seen)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        work()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    events = cpu_memory_events(work)
    events.sort(key=lambda e: e[0])
    running = peak = 0
    for _, nbytes in events:
        running += nbytes
        peak = max(peak, running)
    return peak


class StepClock:
    """Per-step times without a host sync: CUDA events recorded after every step and read at
    the end; on the cpu (synchronous) the wall clock."""

    def __init__(self, device, steps):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
        else:
            self.times = [0.0] * (steps + 1)

    def mark(self, k):
        if self.cuda:
            self.events[k].record()
        else:
            self.times[k] = time.perf_counter()

    def seconds(self):
        if self.cuda:
            torch.cuda.synchronize()
            return np.array([a.elapsed_time(b) / 1e3 for a, b in zip(self.events,
                                                                       self.events[1:])])
        return np.diff(np.array(self.times))


def late(values, fraction=0.1):
    """Mean of the last `fraction` of values (at least one)."""
    values = np.asarray(values, dtype=float)
    return float(np.mean(values[-max(1, int(round(len(values) * fraction))):]))


def train_run(settings, corpus, device, backward, T, forward, seed, on_failure):
    """Trains one model; returns (attributes, datasets)."""
    started, clock = now(), time.perf_counter()
    mixing = Mixing(T, backward, forward, on_failure)
    torch.manual_seed(seed)
    init = {k: settings[k] for k in ("alpha_res", "identity", "pre_select", "post_spread",
                                     "post_select", "fixed_routing")}
    model = StreamLM(VOCABULARY, settings["context"], settings["n"], settings["d"],
                     settings["blocks"], settings["heads"], mixing, init).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    stepper = Stepper(model, params, settings, device, backward != "stop_gradient",
                      settings["step_mode"] == "graph")
    steps, eval_every = settings["steps"], settings["eval_every"]
    measure_every = settings["measure_every"]
    starts = corpus.starts(seed, settings["batch"], steps)

    def evaluate():
        model.eval()
        with torch.no_grad():
            loss = batch_loss(model, *corpus.eval_batch, device, settings["autocast"])
        model.train()
        return loss.detach()

    train_loss = torch.zeros(steps, device=device)
    skipped = torch.zeros(steps, device=device)
    status = torch.zeros(steps, len(STATUS_NAMES), dtype=torch.int64, device=device)
    eval_step, eval_loss = [0], [evaluate()]
    measured = {name: [] for name in MEASURED}
    measured_step, busy = [], np.zeros(steps, dtype=bool)
    busy[:WARMUP + 1] = True  # warm-up and capture: not the steady step's time
    timer = StepClock(device, steps)
    timer.mark(0)
    for step in range(1, steps + 1):
        inputs, targets = corpus.windows(corpus.train, starts[step - 1])
        if step % measure_every == 0 or step == 1:
            numbers = measure(model, mixing, params, inputs, targets, settings, device,
                              backward, peak_backward_bytes)
            for name in MEASURED:
                measured[name].append(numbers[name])
            measured_step.append(step)
            busy[step - 1] = True
        loss, counts, skip = stepper.step(inputs, targets)
        train_loss[step - 1].copy_(loss)
        status[step - 1].copy_(counts)
        skipped[step - 1].copy_(skip)
        if step % eval_every == 0 or step == steps:
            eval_step.append(step)
            eval_loss.append(evaluate())
            busy[step - 1] = True
        timer.mark(step)
    step_seconds = timer.seconds()
    train_loss, skipped = train_loss.cpu().double().numpy(), skipped.cpu().numpy()
    status = status.cpu().numpy()
    eval_loss = torch.stack(eval_loss).cpu().double().numpy()
    hot = ~busy if (~busy).any() else busy
    finite = np.isfinite(train_loss)
    eval_step = np.array(eval_step, dtype=np.int64)
    late_evals = eval_loss[eval_step >= steps - max(1, steps // 10)]
    rel = np.array(measured["grad_rel_error"])
    tokens = settings["batch"] * settings["context"]
    attrs = dict(
        key=run_key(backward, T, forward, seed), backward=backward, T=T, forward=forward,
        eps=EPS[forward], seed=seed, device=device.type, on_failure=on_failure,
        step_mode=stepper.mode, parameters=sum(p.numel() for p in params),
        matrices_per_step=tokens * len(model.layers), started=started,
        process=f"{socket.gethostname()}:{os.getpid()}",
        final_train_loss=late(train_loss[finite]) if finite.any() else float("nan"),
        final_eval_loss=float(eval_loss[-1]), late_eval_loss=float(np.mean(late_evals)),
        min_eval_loss=float(np.nanmin(eval_loss)) if np.isfinite(eval_loss).any() else np.nan,
        diverged=int(not finite.all() or not np.isfinite(eval_loss).all()),
        skipped_steps=int(skipped.sum()), status_counts=status.sum(0),
        status_names=",".join(STATUS_NAMES),
        grad_rel_error_median=float(np.median(rel)), grad_rel_error_max=float(np.max(rel)),
        grad_cosine_median=float(np.median(measured["grad_cosine"])),
        grad_cosine_min=float(np.min(measured["grad_cosine"])),
        sinkhorn_share_median=float(np.median(measured["sinkhorn_share"])),
        step_seconds_median=float(np.median(step_seconds[hot])),
        hot_seconds=float(np.sum(step_seconds[hot])), hot_steps=int(hot.sum()),
        backward_seconds_median=float(np.median(measured["backward_seconds"])),
        backward_peak_bytes=int(max(measured["backward_peak_bytes"])))
    data = dict(train_loss=train_loss, step_seconds=step_seconds,
                measured=busy.astype(np.int8), skipped=skipped.astype(np.int8),
                status_counts=status, eval_step=eval_step, eval_loss=eval_loss,
                measured_step=np.array(measured_step, dtype=np.int64))
    for name in MEASURED:
        data[name] = np.array(measured[name], dtype=np.int64 if name.endswith("bytes")
                              else np.float64)
    attrs["wall_seconds"] = time.perf_counter() - clock
    return attrs, data
