"""Training-study logs read back (the HDF5 files training/training_study.py writes; several
logs, e.g. one per GPU shard, read as one): their complete runs, their selection and order,
and the numbers as a Markdown table (plot_training.py --table). Needs numpy and h5py; no
torch and no matplotlib, so that the table can be printed where there is none:

    python3 training/training_results.py LOG.h5 [LOG.h5 ...]     # the same as --table
"""

import os
import sys

import h5py
import numpy as np

from training_log import first_difference

BACKWARD_ORDER = ["unrolled", "cg_corrected", "cg_plain", "cg_plain_projected", "direct", "auto",
                  "stop_gradient"]


def read(paths):
    """Every complete run of the logs (a path or a list of them): its attributes as plain
    Python values, its datasets under "data". A run key met twice (the same run in two logs)
    is kept once, from the first log. The header is the first log's, with "logs" added."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    runs, keys, header = [], set(), None
    for path in paths:
        with h5py.File(path, "r") as log:
            if log.attrs.get("schema") != "sinkgrad-training-log":
                sys.exit(f"{os.path.basename(sys.argv[0])}: '{path}' is not a training-study log")
            if header is None:
                header = dict(log.attrs)
            elif first_difference(header["study"], log.attrs["study"]):
                sys.exit(f"{os.path.basename(sys.argv[0])}: '{path}' holds another study than "
                         f"'{paths[0]}' (attribute study differs)")
            for group in log["runs"].values():
                if int(group.attrs.get("complete", 0)) != 1 or group.attrs["key"] in keys:
                    continue
                keys.add(group.attrs["key"])
                run = {k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v)
                       for k, v in group.attrs.items()}
                run["data"] = {k: group[k][()] for k in group}  # names shared with attributes
                runs.append(run)
    if not runs:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {', '.join(paths)}: no complete run")
    header["logs"] = paths
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


def unrolled_by_seed(runs, forward, T, key="final_eval_loss"):
    return {r["seed"]: r[key] for r in select(runs, forward=forward, T=T, backward="unrolled")}


def late_eval(runs, forward, backward, T):
    """One setting's late evaluation losses over the seeds that did not diverge, the same minus
    the unrolled run of each seed (seeds with one), and how many seeds diverged: what the table
    and the late-loss figure show."""
    chosen = select(runs, forward=forward, backward=backward, T=T)
    ref = unrolled_by_seed(runs, forward, T, "late_eval_loss")
    finite = [(r["seed"], r.get("late_eval_loss", r["final_eval_loss"])) for r in chosen]
    finite = [(seed, loss) for seed, loss in finite if np.isfinite(loss)]
    losses = np.array([loss for _, loss in finite])
    paired = np.array([loss - ref[seed] for seed, loss in finite if seed in ref])
    return losses, paired, len(chosen) - len(finite)


def degraded(run, runs):
    """1 when the run's late training loss lies above the unrolled seeds' band (their largest
    late training loss) at its forward and T, or the run diverged; None without unrolled runs."""
    band = list(unrolled_by_seed(runs, run["forward"], run["T"], "final_train_loss").values())
    if not band:
        return None
    return int(bool(run.get("diverged", 0)) or not run["final_train_loss"] <= max(band))


def median_of(chosen, key, transform=None):
    values = np.concatenate([np.asarray(r["data"][key], dtype=float) for r in chosen
                             if key in r["data"]] or [[np.nan]])
    return np.nanmedian(transform(values) if transform else values)


def table(runs):
    """One Markdown row per forward, backward and T: the late evaluation loss (mean over the
    last 10 % of the steps; mean and the seeds' range, over the seeds that did not diverge),
    whether that mean lies within the
    unrolled seeds' range, its difference to the unrolled run of the same seed (same weights
    and batches; mean and range), the gradient's relative error against unrolled (median,
    max), the late training loss, the seeds that degraded (late training loss above the
    unrolled seeds' band) and diverged (a non-finite loss), the median share of the gradient
    through the Sinkhorn logits, the median invariant part of the logits' gradient (relative
    to its norm), the logits' drift along the invariant side at the end, the fraction of
    matrices not solved ok, step and backward time, and the backward's peak memory."""
    print("| forward | backward | T | late eval loss: mean [min, max] | within unrolled's "
          "range | minus unrolled, same seed: mean [min, max] | grad rel. error (median) | "
          "grad rel. error (max) | late train loss | degraded | diverged | share through "
          "Sinkhorn | invariant part | logit drift (end) | not ok | step ms | backward ms | "
          "backward MiB |")
    print("|" + "---|" * 18)
    for forward in forward_rows(runs):
        for backward in ordered(r["backward"] for r in runs):
            for T in sorted({r["T"] for r in runs}):
                chosen = select(runs, forward=forward, backward=backward, T=T)
                if not chosen:
                    continue
                losses, diffs, _ = late_eval(runs, forward, backward, T)
                losses = list(losses) or [np.nan]
                mean = np.mean(losses)
                within, paired = "", ""
                by_seed = unrolled_by_seed(runs, forward, T, "late_eval_loss")
                if by_seed:
                    ref = list(by_seed.values())
                    within = "yes" if min(ref) <= mean <= max(ref) else "no"
                    paired = (f"{np.mean(diffs):+.4f} [{min(diffs):+.4f}, {max(diffs):+.4f}]"
                              if len(diffs) else "")
                status = np.sum([r["status_counts"] for r in chosen], axis=0)
                not_ok = f"{1 - status[0] / status.sum():.2%}" if status.sum() else "-"
                worse = [degraded(r, runs) for r in chosen]
                worse = "" if None in worse else f"{sum(worse)}/{len(worse)}"
                invariant = np.nanmedian(np.concatenate(
                    [r["data"]["logits_grad_invariant_norm"] /
                     np.maximum(r["data"]["logits_grad_norm"], 1e-300) for r in chosen]))
                drift = np.mean([r["data"]["logit_drift"][-1] for r in chosen])
                print(f"| {forward} | {backward} | {T} | {mean:.4f} [{min(losses):.4f}, "
                      f"{max(losses):.4f}] | {within} | {paired} | "
                      f"{median_of(chosen, 'grad_rel_error'):.2e} | "
                      f"{np.max([r['grad_rel_error_max'] for r in chosen]):.2e} | "
                      f"{np.nanmean([r['final_train_loss'] for r in chosen]):.4f} | {worse} | "
                      f"{sum(int(r['diverged']) for r in chosen)}/{len(chosen)} | "
                      f"{median_of(chosen, 'sinkhorn_share'):.3f} | {invariant:.3f} | "
                      f"{drift:.2f} | {not_ok} | "
                      f"{1e3 * np.mean([r['step_seconds_median'] for r in chosen]):.1f} | "
                      f"{1e3 * np.mean([r['backward_seconds_median'] for r in chosen]):.1f} | "
                      f"{np.mean([r['backward_peak_bytes'] for r in chosen]) / 2**20:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    table(read(sys.argv[1:])[1])
