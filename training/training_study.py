#!/usr/bin/env python3
"""Does a non-converged implicit gradient train as well as the exact one? A small mHC-style
byte-level language model trained with sinkgrad's PyTorch layer, once per backward, Sinkhorn
iteration count T, forward convention and seed, logged to HDF5.

    python3 training/make_corpus.py                 # once: data/corpus/ from the man pages
    PYTHONPATH=build/python python3 training/training_study.py --output training.h5 --resume
    PYTHONPATH=BUILD/python bash training/gpu_sweep.sh out/training 8   # every GPU, 8-min parts
    python3 training/plot_training.py out/training/part*.h5 [--table]   # one or several logs

The model (docs/experiments.md, "Training study"): a residual stack whose hidden state holds n
streams of width d, the embedding copied into all of them (mHC's expansion). Every sublayer
(causal self-attention, MLP) is wrapped as mHC does: from the token's normalised n*d state come
pre and post weights and the logits a_res * h_res + b_res of an n x n mixing matrix
R = Sinkhorn_T(logits), b_res = identity * I and a_res learnable from --alpha-res, so that the
logits are O(1) and the Sinkhorn carries a real share of the gradient; the streams become
R x + post * F(pre . x). --post-select 3 makes sublayer k write mainly into stream k mod n
(by default every sublayer writes into every stream, the streams stay near-copies and R barely
matters) and --fixed-routing keeps the read and write weights as initialised, so that what a
sublayer writes reaches the others mainly through R. The task: next-byte prediction on a
corpus of the manual pages (training/make_corpus.py: ASCII text, pages held out whole for the
evaluation loss).

Backwards: the layer's unrolled, cg_corrected, direct and auto; cg_plain with the library's
projection off (the plain formula as written); cg_plain_projected, the same with its gradient
projected off the forward's invariant subspace (training/training_mixing.py); stop_gradient, the
control with R detached (no gradient through the Sinkhorn logits).

Per run the log holds the training loss of every step, the evaluation loss every --eval-every
steps, per-step status counts, skipped flags and step times (read from the device once, at the
end of the run: the steps do not wait for the GPU), and on every --measure-every-th step: the
parameter gradient's cosine and relative error against unrolled on the same batch and weights,
the share of the gradient norm that passes through the Sinkhorn logits (against the stop-
gradient control), the logits' gradient along the invariant side, the logits' spread and the
backward's time and peak memory. The schema is in docs/experiments.md. On CUDA the step is
captured once in a CUDA graph and replayed (--step-mode eager turns that off).

Failed matrices: --on-failure (default unrolled) is passed to the layer. With keep a step whose
parameter gradient is not finite skips its update, as a loss-scaling trainer does (on CUDA on
the device, through the fused AdamW's found_inf), and the run counts it (skipped_steps).

Resuming and sharding: every run is written when it is complete (complete = 1 last) and the file
is closed between runs. --resume keeps the complete runs and runs the missing ones only; the log
must come from the same study (attribute study). --shard i/k runs every k-th run of the sweep
from the i-th (its own --output); the summary reads several logs. --budget-minutes stops after
the run in progress once that much time has passed (exit 3: runs remain). SIGINT or SIGTERM
finishes and writes the run in progress, then exits with 130; a second one stops at once.
"""
import argparse
import os
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

from training_data import Corpus  # noqa: E402
from training_log import LIST_KEYS, open_log, write_run  # noqa: E402
from training_mixing import BACKWARDS  # noqa: E402
from training_run import run_key, train_run  # noqa: E402
from training_sweep import (Interrupt, done_elsewhere, parse_list, positive_int,  # noqa: E402
                            shard)

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                      "corpus")
TS = [1, 3, 10, 20]
FORWARDS = ["tilekernels", "rows_first"]
SEEDS = [0, 1, 2, 3, 4]

# The sweep and model of each preset; any option given on the command line replaces its value.
# cuda: 2000 steps of 64 x 128 bytes (16.4 M bytes, about one epoch of the 15 MB corpus, each
# window's start drawn at random; the held-out pages tell memorising apart), with the routing that
# makes R the road between streams (post_select 3, fixed_routing), on which the stop-gradient
# control trains worse than unrolled (docs/results.md).
MODEL = dict(n=4, heads=2, alpha_res=3.0, identity=1.0, pre_select=2.0, post_spread=1.0,
             post_select=0.0, fixed_routing=False)
PRESETS = {
    "cpu": dict(MODEL, backwards=BACKWARDS, T=TS, forwards=FORWARDS, seeds=SEEDS[:3],
                steps=200, eval_every=50, measure_every=25, batch=16, context=64, d=32,
                blocks=1, lr=3e-3, eval_windows=128),
    "cuda": dict(MODEL, backwards=BACKWARDS, T=TS, forwards=FORWARDS, seeds=SEEDS, steps=2000,
                 eval_every=100, measure_every=100, batch=64, context=128, d=128, blocks=4,
                 heads=4, lr=2e-3, eval_windows=1024, post_select=3.0, fixed_routing=True),
    "smoke": dict(MODEL, backwards=BACKWARDS, T=[1, 3], forwards=["tilekernels"], seeds=[0],
                  steps=4, eval_every=2, measure_every=2, batch=4, context=16, d=16, blocks=1,
                  lr=1e-2, eval_windows=8),
}
INT_KEYS = ("steps", "eval_every", "measure_every", "batch", "context", "n", "d", "blocks",
            "heads", "eval_windows")
FLOAT_KEYS = ("lr", "alpha_res", "identity", "pre_select", "post_spread", "post_select")
FLAG_KEYS = ("fixed_routing",)
HELP = {
    "steps": "training steps per run", "eval_every": "evaluation loss every this many steps",
    "measure_every": "gradient agreement, share and memory every this many steps (and step 1)",
    "batch": "windows per training batch", "context": "bytes per window",
    "n": "streams (R is n x n)", "d": "width of a stream", "blocks": "attention + MLP blocks",
    "heads": "attention heads (must divide d)", "eval_windows": "held-out windows evaluated",
    "lr": "AdamW learning rate (constant, no weight decay)",
    "alpha_res": "initial scale a_res of the dynamic mixing logits (h ~ N(0, 1))",
    "identity": "b_res = identity * I: R's static part leans to the identity",
    "pre_select": "b_pre = pre_select * (2 e_k - 1): sublayer k reads mainly stream k mod n",
    "post_spread": "std of the per-stream post biases (the streams start as copies)",
    "post_select": "b_post = post_select * (2 e_k - 1) + the noise: sublayer k writes mainly "
                   "into stream k mod n (0: into every stream; 3: ~1.9 against ~0.1)",
    "fixed_routing": "b_pre, b_post, a_pre, a_post, their rows of W and the head's read are "
                     "not trained (no routing around R)",
}


def preset_text(name):
    return ", ".join(f"{k} {','.join(map(str, v)) if isinstance(v, list) else v}"
                     for k, v in PRESETS[name].items())


def arguments(argv):
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Presets (the model, the steps and the sweep; every value not given on the "
               "command line):\n  --device cpu: " + preset_text("cpu") + "\n  --device cuda: " +
               preset_text("cuda") + "\n  --smoke: " + preset_text("smoke") + "\n\nExit codes: "
               "0 done, 1 the work failed, 2 a bad command line, 3 --budget-minutes reached "
               "with runs left, 130 interrupted. docs/experiments.md describes the log.")
    parser.add_argument("--output", "-o", required=True, help="the HDF5 log")
    parser.add_argument("--resume", action="store_true",
                        help="complete an existing log: keep its complete runs and run only the "
                             "missing ones; the settings must be the same and each sweep list "
                             "the same or wider (the rule for an existing log: "
                             "docs/experiments.md, \"An existing log\")")
    parser.add_argument("--smoke", action="store_true",
                        help="the smoke preset: 4 steps of every backward, T 1 and 3, one seed")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where to train, and the preset (default cpu)")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch.set_num_threads (default 1)")
    parser.add_argument("--on-failure", default="unrolled", choices=list(sgt.ON_FAILURE),
                        help="the layer's on_failure (default unrolled: failed matrices get the "
                             "exact gradient; keep: failures show, and a step with a non-finite "
                             "gradient is skipped)")
    parser.add_argument("--corpus", default=CORPUS,
                        help="directory with train.txt and eval.txt of training/make_corpus.py "
                             f"(default {CORPUS})")
    parser.add_argument("--autocast", default="none", choices=["none", "bf16"],
                        help="run forward and backward under torch.autocast to bfloat16 "
                             "(default none: float32)")
    parser.add_argument("--step-mode", choices=["graph", "eager"],
                        help="graph: capture the training step in a CUDA graph after 3 eager "
                             "steps and replay it (falls back to eager if the capture fails); "
                             "eager: no graph (default graph on cuda; the cpu is always eager)")
    parser.add_argument("--shard", type=shard, default=(0, 1), metavar="I/K",
                        help="run only the runs whose index in the sweep (after leaving out "
                             "those of --done-logs) is I modulo K (0 <= I < K), e.g. one process "
                             "per GPU, each with its own --output (default 0/1: all)")
    parser.add_argument("--done-logs", metavar="GLOB",
                        help="skip the runs already complete in these logs (a glob, e.g. "
                             "'out/shard*.h5'; of the same study) before --shard splits the "
                             "rest: parts of a sweep may then run on any number of GPUs")
    parser.add_argument("--budget-minutes", type=float,
                        help="stop after the run in progress once this many minutes have "
                             "passed (exit 3 if runs remain; --resume continues)")
    parser.add_argument("--backwards", type=parse_list(str, BACKWARDS),
                        help=f"backwards to sweep, of {','.join(BACKWARDS)}")
    parser.add_argument("--T", type=parse_list(int), help="Sinkhorn iteration counts to sweep")
    parser.add_argument("--forwards", type=parse_list(str, sgt.FORWARDS),
                        help=f"forward conventions to sweep, of {','.join(sgt.FORWARDS)}")
    parser.add_argument("--seeds", type=parse_list(int),
                        help="seeds to sweep (initial weights and batches)")
    for key in INT_KEYS:
        parser.add_argument("--" + key.replace("_", "-"), type=positive_int, help=HELP[key])
    for key in FLOAT_KEYS:
        parser.add_argument("--" + key.replace("_", "-"), type=float, help=HELP[key])
    for key in FLAG_KEYS:
        parser.add_argument("--" + key.replace("_", "-"), action=argparse.BooleanOptionalAction,
                            default=None, help=HELP[key])
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    settings = dict(PRESETS["smoke" if args.smoke else args.device])
    for key in LIST_KEYS + INT_KEYS + FLOAT_KEYS + FLAG_KEYS:
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    step_mode = args.step_mode or ("graph" if args.device == "cuda" else "eager")
    settings.update(device=args.device, on_failure=args.on_failure, dtype="float32",
                    autocast=args.autocast, step_mode=step_mode)
    if settings["d"] % settings["heads"]:
        parser.error(f"--d {settings['d']} is not a multiple of --heads {settings['heads']}")
    if any(T < 1 for T in settings["T"]):
        parser.error("every T must be >= 1")
    return args, settings


def main(argv=None):
    args, settings = arguments(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("training_study.py: --device cuda but torch sees no GPU")
    corpus = Corpus(os.path.abspath(args.corpus), settings["context"],
                    settings["eval_windows"], device)
    # The corpus is compared by its contents, not its path: a resume on another machine (the
    # corpus carried to another directory) continues the same study.
    settings["corpus_sha256"] = corpus.sha256
    done = open_log(args.output, settings, corpus, device, args.resume)
    # Seeds outermost: a sweep stopped part way (a time budget) has every setting on the same
    # seeds, one seed short at most.
    sweep = [(b, T, f, s) for s in settings["seeds"] for f in settings["forwards"]
             for T in settings["T"] for b in settings["backwards"]]
    elsewhere = done_elsewhere(args.done_logs, args.output, settings)
    index, count = args.shard
    # Without --done-logs a shard's runs never change (taken from the whole sweep); with it,
    # processes started together see the same logs and so split the rest alike.
    mine = [run for run in sweep if run_key(*run) not in elsewhere][index::count]
    todo = [run for run in mine if run_key(*run) not in done]
    if not args.quiet:
        print(f"training_study.py: {len(sweep)} runs, {len(elsewhere)} in other logs, shard "
              f"{index}/{count}: {len(mine)}, "
              f"{len(mine) - len(todo)} already in '{args.output}', {len(todo)} to run",
              file=sys.stderr, flush=True)
    interrupt = Interrupt()
    clock = time.perf_counter()
    budget = None if args.budget_minutes is None else 60.0 * args.budget_minutes
    for k, (backward, T, forward, seed) in enumerate(todo, 1):
        attrs, data = train_run(settings, corpus, device, backward, T, forward, seed,
                                args.on_failure)
        write_run(args.output, attrs, data)
        elapsed = time.perf_counter() - clock
        if not args.quiet:
            print(f"training_study.py: [{k}/{len(todo)}] {attrs['key']}: eval loss "
                  f"{attrs['final_eval_loss']:.4f}, train {attrs['final_train_loss']:.4f}, "
                  f"{attrs['wall_seconds']:.1f} s, {1e3 * attrs['step_seconds_median']:.1f} "
                  f"ms/step (elapsed {elapsed:.0f} s, eta "
                  f"{elapsed / k * (len(todo) - k):.0f} s)", file=sys.stderr, flush=True)
        if interrupt.requested and k < len(todo):
            print(f"training_study.py: stopped after {k} runs; --resume completes the log",
                  file=sys.stderr, flush=True)
            return 130
        if budget is not None and elapsed >= budget and k < len(todo):
            print(f"training_study.py: --budget-minutes {args.budget_minutes:g} reached after "
                  f"{k} runs, {len(todo) - k} left; --resume continues", file=sys.stderr,
                  flush=True)
            return 3
    print(f"training_study.py: {args.output}: {len(mine)} runs complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
