"""The HDF5 log of training/training_study.py: its schema and descriptions, the study's
settings as text (what --resume compares), creating or resuming a log, writing one run."""
import datetime
import os
import socket
import sys

import h5py

SCHEMA = "sinkgrad-training-log"
SCHEMA_VERSION = 2  # 2: the manual-page corpus, measured-step numbers, late-window summaries
LIST_KEYS = ("backwards", "T", "forwards", "seeds")  # the sweep's lists
# Settings added after logs had been written, with the value that computes what those logs'
# runs computed, bit for bit: a log without the line counts as holding that value.
ADDED_SETTINGS = {"post_select": "0.0", "fixed_routing": "False"}


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
    "step_mode": ("graph (the step replayed from a CUDA graph) or eager, with why a capture "
                  "failed", ""),
    "final_train_loss": ("mean training loss of the last 10 % of the steps (finite ones)",
                         "nats/byte"),
    "final_eval_loss": ("evaluation loss after the last step", "nats/byte"),
    "late_eval_loss": ("mean evaluation loss over the last 10 % of the steps", "nats/byte"),
    "min_eval_loss": ("lowest evaluation loss of the run", "nats/byte"),
    "diverged": ("1 if a training or evaluation loss was not finite", ""),
    "skipped_steps": ("steps whose optimiser update was skipped (non-finite gradient)", ""),
    "status_counts": ("int64[6] matrices per status over all steps' backwards", "matrices"),
    "status_names": ("names of status_counts' entries", ""),
    "grad_rel_error_median": ("median over measured steps of grad_rel_error", "relative"),
    "grad_rel_error_max": ("largest grad_rel_error over measured steps", "relative"),
    "grad_cosine_median": ("median over measured steps of grad_cosine", ""),
    "grad_cosine_min": ("smallest grad_cosine over measured steps", ""),
    "sinkhorn_share_median": ("median over measured steps of sinkhorn_share", ""),
    "step_seconds_median": ("median time of a step that was neither measured, evaluated nor "
                            "a warm-up or capture step (forward, backward, update)", "s"),
    "hot_seconds": ("sum of the times of those steps", "s"),
    "hot_steps": ("how many steps those are", ""),
    "backward_seconds_median": ("median time of the run's backward on measured steps (eager, "
                                "synchronised)", "s"),
    "backward_peak_bytes": ("largest peak memory allocated by a measured step's backward",
                            "bytes"),
    "complete": ("1 once the run is fully written (a run without it is removed on --resume)",
                 ""),
}
DATASETS = {
    "train_loss": ("training loss of each step's batch", "nats/byte"),
    "step_seconds": ("each step, from the end of the previous one (CUDA events on cuda; measured "
                     "and evaluation steps include those)", "s"),
    "measured": ("1 for a step measured, evaluated, a warm-up or a capture step", ""),
    "skipped": ("1 for a step whose update was skipped (non-finite gradient)", ""),
    "status_counts": ("(steps, 6) matrices per status in each step's backward", "matrices"),
    "eval_step": ("steps after which the evaluation loss was computed (0: before training)",
                  ""),
    "eval_loss": ("evaluation loss on the held-out pages", "nats/byte"),
    "measured_step": ("the steps at which the gradient was measured", ""),
    "grad_cosine": ("cosine similarity of the parameter gradient with the unrolled backward's "
                    "on the same batch and weights", ""),
    "grad_rel_error": ("||g - g_unrolled|| / ||g_unrolled|| over all parameters", "relative"),
    "sinkhorn_share": ("||g_unrolled - g_stop|| / ||g_unrolled||: the share of the exact "
                       "parameter gradient that passes through the Sinkhorn logits (g_stop: R "
                       "detached)", ""),
    "logits_grad_norm": ("Frobenius norm of the run's gradient w.r.t. all mixing logits of the "
                         "step (as the layer returns it, before any projection)", ""),
    "logits_grad_invariant_norm": ("its component in the forward's invariant subspace (mean "
                                   "along the invariant side; 0 for the exact gradient)", ""),
    "logit_spread": ("RMS over matrices of the double-centred logits' entries (what R sees at "
                     "convergence)", "logits"),
    "logit_drift": ("RMS over matrices of the logits' mean along the invariant side (what no "
                    "forward sees)", "logits"),
    "backward_seconds": ("the run's backward on the measured step (eager, synchronised)", "s"),
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
    "corpus": ("directory of the corpus (training/make_corpus.py)", ""),
    "corpus_sha256": ("SHA-256 of the SHA-256 digests of train.txt and eval.txt", ""),
    "vocabulary": ("tokens: the 256 byte values", ""),
    "train_chars": ("bytes of train.txt", ""),
    "eval_chars": ("bytes of eval.txt (whole pages never trained on)", ""),
}


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fnv1a(text):
    """16 hex digits of the 64-bit FNV-1a hash, as the study log names its runs."""
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


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
    """The first setting in which two study texts differ, as a phrase; '' if none does (a
    setting of ADDED_SETTINGS that one lacks counts as its value there)."""
    old, new = ({**ADDED_SETTINGS, **dict(line.split("=", 1) for line in text.splitlines()
                                          if line)} for text in (logged, current))
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
    import torch  # here only: the log's readers (training_results.py) need no torch
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
            # The rule of docs/experiments.md ("An existing log"): each sweep list the same or
            # wider; the log's sweep becomes the wider one.
            logged = dict(line.split("=", 1) for line in log.attrs["sweep"].splitlines())
            for key in LIST_KEYS:
                given = [str(v) for v in settings[key]]
                missing = [v for v in logged[key].split(",") if v not in given]
                if missing:
                    raise SystemExit(f"training_study.py: '{path}': --{key} {logged[key]!r} in "
                                     f"the log, {','.join(given)!r} now (narrowed: "
                                     f"{','.join(missing)} missing); --resume may only add to "
                                     "the sweep's lists, or give another --output")
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
            host=socket.gethostname(), devices=devices_text(device), corpus=text.directory,
            corpus_sha256=text.sha256, vocabulary=256, train_chars=text.train_chars,
            eval_chars=text.eval_chars))
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
