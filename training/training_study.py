#!/usr/bin/env python3
"""Does a non-converged implicit gradient train as well as the exact one? A small mHC-style
character-level language model trained with sinkgrad's PyTorch layer, once per backward solver,
Sinkhorn iteration count T, forward convention and seed, logged to HDF5.

    PYTHONPATH=build/python python3 training/training_study.py --output training.h5 --resume
    PYTHONPATH=build/python python3 training/training_study.py --smoke --output smoke.h5
    python3 training/plot_training.py training.h5 --out-dir docs/results

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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "experiments"))  # system_python, plot_style
from system_python import require_modules  # noqa: E402

os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # the profiler's allocator warnings
os.environ.setdefault("GLOG_minloglevel", "2")
require_modules(("h5py", "numpy", "torch"), "python3-torch python3-h5py python3-numpy")

import torch  # noqa: E402

try:
    import sinkgrad.torch as sgt  # noqa: E402
except ImportError as error:
    sys.exit(f"training_study.py: {error}; run with PYTHONPATH=build/python after a build")

from training_log import LIST_KEYS, open_log, write_run  # noqa: E402
from training_model import Text  # noqa: E402
from training_run import run_key, train_run  # noqa: E402

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
                        help="complete an existing log: keep its complete runs and run only the "
                             "missing ones; the settings must be the same and each sweep list "
                             "the same or wider (the rule for an existing log: "
                             "docs/experiments.md, \"An existing log\")")
    parser.add_argument("--smoke", action="store_true",
                        help="a few steps of every backward and T, one seed, columns_first")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch.set_num_threads (default 1)")
    parser.add_argument("--on-failure", default="unrolled", choices=list(sgt.ON_FAILURE),
                        help="the layer's on_failure (default unrolled: failed matrices get the "
                             "exact gradient; keep: failures show, and a step with a non-finite "
                             "gradient is skipped)")
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
                             "does (dL/dR is then constant along R's exact side and the true "
                             "gradient of the logits is zero)")
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
