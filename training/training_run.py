"""One run of training/training_study.py: the model trained for a number of steps with one
backward, T, forward convention and seed, its losses, times, status counts, and on measured
steps the gradient's agreement with the unrolled backward's and the backward's peak memory."""
import os
import socket
import time

import numpy as np
import torch
from torch.nn import functional as F

from training_log import now
from training_model import EPS, STATUS_NAMES, Sinkhorn, StreamLM


def run_key(backward, T, forward, seed):
    return f"backward={backward} T={T} forward={forward} eps={EPS[forward]:g} seed={seed}"


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
