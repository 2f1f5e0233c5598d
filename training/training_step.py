"""The training update of one run of training/training_study.py (forward, backward, status
counts, finite check, AdamW) without a host sync, eager or captured once in a CUDA graph and
replayed; and the measurement of a step's gradients, which runs beside it on the same weights
and batch (eager, synchronising: it is off the hot path)."""
import contextlib
import sys
import time

import torch
from torch.nn import functional as F

from training_mixing import Probe

WARMUP = 3  # eager steps before a capture, as PyTorch's CUDA-graph documentation advises


def autocast_context(device, autocast):
    """torch.autocast for the bf16 arm (its weight-cast cache off: a CUDA graph replays the
    casts), a no-op for float32."""
    if autocast == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


def batch_loss(model, inputs, targets, device, autocast):
    with autocast_context(device, autocast):
        out = model(inputs)
    return F.cross_entropy(out.float().reshape(-1, out.shape[-1]), targets.reshape(-1))


def make_optimiser(params, lr, device):
    """AdamW; on CUDA the fused one, which skips its update on the device when found_inf is
    set (as under a GradScaler), so a non-finite gradient needs no host sync; capturable, so
    that a CUDA graph can hold it. Returns (optimiser, fused)."""
    if device.type == "cuda":
        try:
            return torch.optim.AdamW(params, lr=lr, weight_decay=0.0, fused=True,
                                     capturable=True), True
        except (TypeError, RuntimeError, ValueError):
            pass
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0), False


class Stepper:
    def __init__(self, model, params, settings, device, solved, graph):
        self.model, self.params, self.device, self.solved = model, params, device, solved
        self.autocast = settings["autocast"]
        self.optimiser, self.fused = make_optimiser(params, settings["lr"], device)
        self.found_inf = torch.zeros((), dtype=torch.float32, device=device)
        self.one = torch.ones((), dtype=torch.float32, device=device)
        if self.fused:
            self.optimiser.found_inf, self.optimiser.grad_scale = self.found_inf, None
        shape = (settings["batch"], settings["context"])
        self.inputs = torch.zeros(shape, dtype=torch.long, device=device)
        self.targets = torch.zeros(shape, dtype=torch.long, device=device)
        self.want_graph = graph and device.type == "cuda"
        self.graph, self.static, self.eager_steps = None, None, 0
        self.mode = "graph" if self.want_graph else "eager"

    def compute(self):
        """The step on self.inputs/targets: (loss, status counts, skipped flag), on the device."""
        loss = batch_loss(self.model, self.inputs, self.targets, self.device, self.autocast)
        loss.backward()
        counts = self.model.status_counts(self.solved)
        grads = [p.grad for p in self.params if p.grad is not None]
        if self.fused:
            self.found_inf.zero_()
            torch._amp_foreach_non_finite_check_and_unscale_(grads, self.found_inf, self.one)
            self.optimiser.step()
        else:  # the cpu: a host check costs nothing there
            finite = all(bool(torch.isfinite(g).all()) for g in grads)
            self.found_inf.fill_(0.0 if finite else 1.0)
            if finite:
                self.optimiser.step()
        return loss.detach(), counts, self.found_inf.clone()

    def step(self, inputs, targets):
        self.inputs.copy_(inputs)
        self.targets.copy_(targets)
        if self.graph is not None:
            self.graph.replay()
            return self.static
        if self.want_graph and self.eager_steps >= WARMUP:
            try:
                return self.capture()
            except Exception as error:  # noqa: BLE001 -- any capture failure: stay eager
                self.want_graph, self.graph = False, None
                self.mode = f"eager (CUDA graph capture failed: {type(error).__name__}: {error})"
                print(f"training_study.py: {self.mode}", file=sys.stderr, flush=True)
        self.eager_steps += 1
        self.optimiser.zero_grad(set_to_none=True)
        if not self.want_graph:
            return self.compute()
        # Warm-up steps run on a side stream, so that lazily made handles and workspaces
        # are not created on the stream that is captured next.
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            result = self.compute()
        torch.cuda.current_stream(self.device).wait_stream(side)
        return result

    def capture(self):
        # Gradients set to None, so that the captured backward allocates them in the graph's
        # memory and every replay overwrites them (a replay never accumulates).
        self.optimiser.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = self.compute()
        self.graph, self.static = graph, static
        graph.replay()  # a capture records the step without running it
        return static


def flat(grads, params):
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1).double()
                      for g, p in zip(grads, params)])


def agreement(g, reference):
    """(cosine, relative error) of g against reference; exactly (1, 0) when they are equal."""
    if torch.equal(g, reference):
        return 1.0, 0.0
    norm = reference.norm()
    return (float(g @ reference / (g.norm() * norm)), float((g - reference).norm() / norm))


def measure(model, mixing, params, inputs, targets, settings, device, backward, peak_bytes):
    """The measured step's numbers, from the same weights and batch: the run's gradient against
    the unrolled backward's (cosine, relative error), the share of the unrolled gradient's norm
    that passes through the Sinkhorn logits (||g - g_stop|| / ||g||, g_stop with R detached),
    the run's logits gradient along the invariant side and the logits' spread (Probe), and the
    run's backward time and peak memory. Leaves the model's .grad untouched."""
    grads, numbers = {}, {}
    for name in dict.fromkeys((backward, "unrolled", "stop_gradient")):
        mixing.backward = name
        mixing.probe = Probe(device) if name == backward else None
        if name == backward:
            probe = mixing.probe
        loss = batch_loss(model, inputs, targets, device, settings["autocast"])
        if name == backward:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            begin = time.perf_counter()
            result = []
            numbers["backward_peak_bytes"] = peak_bytes(
                lambda: result.append(torch.autograd.grad(loss, params, allow_unused=True)),
                device)
            numbers["backward_seconds"] = time.perf_counter() - begin
            grads[name] = flat(result[0], params)
        else:
            grads[name] = flat(torch.autograd.grad(loss, params, allow_unused=True), params)
    mixing.backward, mixing.probe = backward, None
    numbers["grad_cosine"], numbers["grad_rel_error"] = agreement(grads[backward],
                                                                  grads["unrolled"])
    exact = grads["unrolled"]
    numbers["sinkhorn_share"] = float((exact - grads["stop_gradient"]).norm() / exact.norm())
    sums = dict(zip(Probe.NAMES, probe.sums.tolist()))
    matrices = max(sums["matrices"], 1.0)
    numbers["logits_grad_norm"] = sums["grad_sq"] ** 0.5
    numbers["logits_grad_invariant_norm"] = sums["grad_invariant_sq"] ** 0.5
    numbers["logit_spread"] = (sums["spread_sq"] / matrices) ** 0.5
    numbers["logit_drift"] = (sums["drift_sq"] / matrices) ** 0.5
    return numbers
