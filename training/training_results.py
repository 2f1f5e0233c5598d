"""A training-study log read back (the HDF5 file training/training_study.py writes): its
complete runs, their selection and order, and the numbers as a Markdown table
(plot_training.py --table). Needs numpy and h5py; no torch."""

import os
import sys

import h5py
import numpy as np

BACKWARD_ORDER = ["unrolled", "cg_corrected", "cg_plain", "direct"]


def read(path):
    """Every complete run: its attributes as plain Python values, its datasets under "data"."""
    runs = []
    with h5py.File(path, "r") as log:
        if log.attrs.get("schema") != "sinkgrad-training-log":
            sys.exit(f"{os.path.basename(sys.argv[0])}: '{path}' is not a training-study log")
        header = dict(log.attrs)
        for group in log["runs"].values():
            if int(group.attrs.get("complete", 0)) != 1:
                continue
            run = {k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v)
                   for k, v in group.attrs.items()}
            run["data"] = {k: group[k][()] for k in group}  # names shared with attributes
            runs.append(run)
    if not runs:
        sys.exit(f"{os.path.basename(sys.argv[0])}: '{path}' holds no complete run")
    return header, runs


def ordered(values, order=BACKWARD_ORDER):
    return sorted(set(values), key=lambda v: (order.index(v) if v in order else len(order), v))


def select(runs, **where):
    return [r for r in runs if all(r[k] == v for k, v in where.items())]


def seed_stack(runs, key):
    """The seeds' arrays of one dataset, cut to the shortest, as (seeds, length)."""
    arrays = [np.asarray(r["data"][key], dtype=float) for r in runs]
    length = min(len(a) for a in arrays)
    return np.array([a[:length] for a in arrays])


def forward_rows(runs):
    return ordered((r["forward"] for r in runs), ["columns_first", "rows_first", "tilekernels"])


def forward_title(runs, forward):
    eps = select(runs, forward=forward)[0]["eps"]
    return f"forward {forward}" + (f" (eps = {eps:g})" if eps else "")


def unrolled_by_seed(runs, forward, T):
    return {r["seed"]: r["final_eval_loss"]
            for r in select(runs, forward=forward, T=T, backward="unrolled")}


def table(runs):
    """One Markdown row per forward, backward and T: final evaluation loss (mean and the seeds'
    range), whether that mean lies within the unrolled seeds' range, its difference to the
    unrolled run of the same seed (same weights and batches; mean and range), the gradient's
    median relative error against unrolled, the fraction of matrices not solved ok, step and
    backward time, and the backward's peak memory."""
    print("| forward | backward | T | final eval loss: mean [min, max] | within unrolled's "
          "range | minus unrolled, same seed: mean [min, max] | grad rel. error (median) | "
          "not ok | step ms | backward ms | backward MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for forward in forward_rows(runs):
        for backward in ordered(r["backward"] for r in runs):
            for T in sorted({r["T"] for r in runs}):
                chosen = select(runs, forward=forward, backward=backward, T=T)
                if not chosen:
                    continue
                losses = [r["final_eval_loss"] for r in chosen]
                mean = np.mean(losses)
                within, paired = "", ""
                by_seed = unrolled_by_seed(runs, forward, T)
                if by_seed:
                    ref = list(by_seed.values())
                    within = "yes" if min(ref) <= mean <= max(ref) else "no"
                    diffs = [r["final_eval_loss"] - by_seed[r["seed"]] for r in chosen
                             if r["seed"] in by_seed]
                    paired = (f"{np.mean(diffs):+.4f} [{min(diffs):+.4f}, {max(diffs):+.4f}]"
                              if diffs else "")
                status = np.sum([r["status_counts"] for r in chosen], axis=0)
                error = np.median(np.concatenate([r["data"]["grad_rel_error"] for r in chosen]))
                print(f"| {forward} | {backward} | {T} | {mean:.4f} [{min(losses):.4f}, "
                      f"{max(losses):.4f}] | {within} | {paired} | {error:.2e} | "
                      f"{1 - status[0] / status.sum():.2%} | "
                      f"{1e3 * np.mean([r['step_seconds_median'] for r in chosen]):.1f} | "
                      f"{1e3 * np.mean([r['backward_seconds_median'] for r in chosen]):.1f} | "
                      f"{np.mean([r['backward_peak_bytes'] for r in chosen]) / 2**20:.2f} |")
