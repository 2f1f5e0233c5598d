#!/usr/bin/env python3
"""Pictures of a training-study log (the HDF5 file training/training_study.py writes).

    python3 training/plot_training.py LOG.h5 [LOG.h5 ...] [--out-dir DIR] [--dpi N] [--stamp T]
    python3 training/plot_training.py LOG.h5 [LOG.h5 ...] --table     # the numbers, Markdown

Several logs of one study (e.g. one per --shard) are read as one; the figures are named after
the first.

Writes PNG files into DIR (default: the log's directory), named after the log, and prints
their paths, one per line:

  <log>_loss_curves_<forward>.png   one panel per T: the evaluation loss along training per
                                    backward (mean over seeds, markers) and the training loss
                                    (mean over seeds, smoothed, thin line)
  <log>_final_eval_loss.png         one column per forward convention: the late evaluation
                                    loss (mean over the last 10 % of the steps) against T per
                                    backward, mean over seeds with the
                                    seeds' range as an error bar, the grey band the range of
                                    the unrolled runs' seeds; below, the same minus the
                                    unrolled run of the same seed (same weights and batches),
                                    the grey band the unrolled seeds' spread about their mean
  <log>_gradient_agreement.png      per forward convention (rows): the relative error and
                                    1 - cosine of each implicit backward's parameter gradient
                                    against the unrolled one on the same batch, against T: the
                                    median over the measured steps and seeds, the band from
                                    their first measured step (start of training) to their
                                    last (end)
  <log>_gradient_along_training_<forward>.png   one panel per T: the relative error per
                                    measured step (mean over seeds) along training
  <log>_mechanism_<forward>.png     per T (rows): the share of the exact gradient through the
                                    Sinkhorn, the invariant part of the run's logits gradient
                                    and the logits' drift along training (plot_training_mechanism)
  <log>_time_memory.png             per forward convention (rows): median time of a training
                                    step and of its backward, and the backward's peak memory,
                                    against T per backward (mean over seeds)

The unrolled backward agrees with itself exactly (relative error 0), so it is left out of the
gradient figures. Needs numpy, h5py and matplotlib.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "experiments"))  # system_python, plot_style
from system_python import require_modules  # noqa: E402

require_modules(("h5py", "matplotlib", "numpy"), "python3-numpy python3-h5py python3-matplotlib")

import numpy as np  # noqa: E402

import plot_style as ps  # noqa: E402
from plot_style import plt  # noqa: E402
from plot_training_mechanism import plot_mechanism  # noqa: E402
from training_results import (forward_rows, forward_title, late_eval, ordered, read,  # noqa: E402
                              seed_stack, select, table, unrolled_by_seed)


def finite_mean(stack):
    """The mean over seeds (axis 0) of the finite values: a diverged seed leaves the mean of the
    others (the table's means are over the seeds that did not diverge, too); NaN where none is
    finite."""
    finite = np.isfinite(stack)
    counts = finite.sum(0)
    return np.where(counts > 0, np.where(finite, stack, 0).sum(0) / np.maximum(counts, 1), np.nan)


def smooth(values, width):
    if len(values) < width or width < 2:
        return values
    kernel = np.ones(width) / width
    return np.convolve(values, kernel, mode="valid")


def per_T_panels(Ts, title, ylabel, log_y=False):
    """One panel per T, three to a row, sharing y; cells past the last T are removed."""
    ncols = min(3, len(Ts))
    nrows = (len(Ts) + ncols - 1) // ncols
    fig, grid = plt.subplots(nrows, ncols, figsize=(4.4 * ncols + 0.6, 3.4 * nrows + 0.9),
                             squeeze=False, sharey=True)
    fig.suptitle(title, fontsize=12)
    axes = []
    for k, ax in enumerate(grid.flat):
        if k >= len(Ts):
            fig.delaxes(ax)
            continue
        ax.set_title(f"T = {Ts[k]}", fontsize=10)
        ax.set_xlabel("training step")
        if log_y:
            ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.35)
        if k % ncols == 0:
            ax.set_ylabel(ylabel)
        axes.append(ax)
    return fig, axes


def plot_loss_curves(runs, forward, style, out, dpi, stamp):
    Ts = sorted({r["T"] for r in runs})
    fig, axes = per_T_panels(
        Ts, f"Training loss along training, forward {forward}: evaluation loss (markers) and "
        "training loss (thin, smoothed), mean over the seeds not diverged", "loss (nats / byte)")
    for ax, T in zip(axes, Ts):
        for backward in ordered(r["backward"] for r in runs):
            chosen = select(runs, T=T, backward=backward)
            if not chosen:
                continue
            color, marker, line, face = style[backward]
            evals = finite_mean(seed_stack(chosen, "eval_loss"))
            steps = np.asarray(chosen[0]["data"]["eval_step"])[:len(evals)]
            ax.plot(steps, evals, color=color, marker=marker, linestyle=line,
                    markerfacecolor=face, label=backward)
            train = finite_mean(seed_stack(chosen, "train_loss"))
            width = max(1, len(train) // 10)
            smoothed = smooth(train, width)
            ax.plot(np.arange(len(smoothed)) + (width + 1) / 2, smoothed, color=color,
                    linewidth=0.7, alpha=0.6, linestyle=line)
    ps.stamp(fig, stamp)
    name = f"{out[1]}_loss_curves_{ps.slug(forward)}.png"
    return ps.finish(fig, axes, os.path.join(out[0], name), dpi)


OFF_SCALE = 0.25  # nats per byte above unrolled: such a backward is listed, not drawn


def plot_final_loss(runs, style, out, dpi, stamp):
    """Top row: the late evaluation loss; bottom row: minus the unrolled run's of the same
    seed (same initial weights and batches), the grey band there being the unrolled seeds'
    spread around their mean. Means and ranges are over the seeds whose loss is finite (the
    others diverged: their count is written beside the point). A backward whose mean lies more
    than OFF_SCALE above unrolled's at some T is not drawn, so that the scale shows the
    differences between the others; its range of differences is written in the panel."""
    forwards = forward_rows(runs)
    Ts = sorted({r["T"] for r in runs})
    fig, axes = plt.subplots(2, len(forwards), figsize=(4.6 * len(forwards) + 0.6, 7.4),
                             squeeze=False, sharey="row")
    fig.suptitle("Late evaluation loss (last 10 % of steps) against T: mean over seeds, bars: "
                 "the seeds' range; grey: the unrolled seeds' range", fontsize=12)
    backwards = ordered(r["backward"] for r in runs)
    for col, forward in enumerate(forwards):
        top, bottom = axes[0][col], axes[1][col]
        top.set_title(forward_title(runs, forward), fontsize=10)
        bottom.set_title(f"{forward}: minus unrolled of the same seed", fontsize=10)
        exact = [list(unrolled_by_seed(runs, forward, T, "late_eval_loss").values()) or [np.nan]
                 for T in Ts]
        top.fill_between(Ts, [min(e) for e in exact], [max(e) for e in exact], color="0.85",
                         zorder=0)
        bottom.fill_between(Ts, [min(e) - np.mean(e) for e in exact],
                            [max(e) - np.mean(e) for e in exact], color="0.85", zorder=0)
        off_scale = []
        for k, backward in enumerate(backwards):
            color, marker, line, face = style[backward]
            shift = 1 + 0.03 * (k - (len(backwards) - 1) / 2)  # bars side by side
            # (T, losses, paired differences, seeds diverged) of each T the backward ran
            points = [(T, *late_eval(runs, forward, backward, T)) for T in Ts]
            differences = [paired for _, _, paired, _ in points if len(paired)]
            if any(np.mean(v) > OFF_SCALE for v in differences):
                low = min(v.min() for v in differences)
                high = max(v.max() for v in differences)
                lost = sum(d for _, _, _, d in points)
                off_scale.append(f"{backward}: {low:+.2f} to {high:+.2f}" +
                                 (f", {lost} diverged" if lost else ""))
                continue
            for ax, k in ((top, 1), (bottom, 2)):
                drawn = [(p[0], p[k], p[3]) for p in points if len(p[k])]
                means = [np.mean(v) for _, v, _ in drawn]
                ax.errorbar([T * shift for T, _, _ in drawn], means,
                            yerr=[[m - v.min() for m, (_, v, _) in zip(means, drawn)],
                                  [v.max() - m for m, (_, v, _) in zip(means, drawn)]],
                            color=color, marker=marker, linestyle=line, markerfacecolor=face,
                            capsize=2, label=backward)
                for (T, v, d), m in zip(drawn, means):
                    if d:
                        ax.annotate(f"{d} diverged", (T * shift, m), fontsize=7, color=color,
                                    xytext=(4, 4), textcoords="offset points")
        if off_scale:
            bottom.text(0.02, 0.98, "off the scale (not drawn):\n" + "\n".join(off_scale),
                        transform=bottom.transAxes, fontsize=7, va="top")
        for ax in (top, bottom):
            ps.T_axis(ax, Ts)
            ax.set_xlabel("T (Sinkhorn iterations)")
            ax.grid(True, alpha=0.35)
    axes[0][0].set_ylabel("late evaluation loss (nats / byte)")
    axes[1][0].set_ylabel("difference (nats / byte)")
    ps.stamp(fig, stamp)
    return ps.finish(fig, axes, os.path.join(out[0], f"{out[1]}_final_eval_loss.png"), dpi)


def plot_agreement(runs, style, out, dpi, stamp):
    forwards = forward_rows(runs)
    Ts = sorted({r["T"] for r in runs})
    implicit = [b for b in ordered(r["backward"] for r in runs) if b != "unrolled"]
    fig, axes = plt.subplots(len(forwards), 2, figsize=(10.0, 3.4 * len(forwards) + 0.9),
                             squeeze=False)
    fig.suptitle("Parameter gradient against the unrolled backward's on the same batch: median "
                 "over measured steps and seeds; band: start to end of training", fontsize=12)
    for row, forward in enumerate(forwards):
        for col, (metric, label) in enumerate((("grad_rel_error", "relative error"),
                                               ("grad_cosine", "1 - cosine similarity"))):
            ax = axes[row][col]
            ax.set_title(f"{forward_title(runs, forward)}: {label}", fontsize=10)
            for backward in implicit:
                color, marker, line, face = style[backward]
                medians, first, last = [], [], []
                for T in Ts:
                    chosen = select(runs, forward=forward, T=T, backward=backward)
                    if not chosen:
                        medians.append(np.nan), first.append(np.nan), last.append(np.nan)
                        continue
                    values = seed_stack(chosen, metric)
                    if metric == "grad_cosine":
                        values = 1.0 - values
                    values = np.maximum(values, ps.FLOOR)
                    medians.append(np.median(values))
                    first.append(np.mean(values[:, 0]))
                    last.append(np.mean(values[:, -1]))
                ax.plot(Ts, medians, color=color, marker=marker, linestyle=line,
                        markerfacecolor=face, label=backward)
                ax.fill_between(Ts, np.minimum(first, last), np.maximum(first, last),
                                color=color, alpha=0.15)
            ax.set_yscale("log")
            ps.T_axis(ax, Ts)
            ax.set_xlabel("T (Sinkhorn iterations)")
            ax.grid(True, which="major", alpha=0.35)
    ps.stamp(fig, stamp)
    return ps.finish(fig, axes, os.path.join(out[0], f"{out[1]}_gradient_agreement.png"), dpi)


def plot_along_training(runs, forward, style, out, dpi, stamp):
    Ts = sorted({r["T"] for r in runs})
    implicit = [b for b in ordered(r["backward"] for r in runs) if b != "unrolled"]
    fig, axes = per_T_panels(
        Ts, "Relative error of the parameter gradient against unrolled along training, "
        f"forward {forward} (mean over seeds)", "relative error vs unrolled", log_y=True)
    for ax, T in zip(axes, Ts):
        for backward in implicit:
            chosen = select(runs, T=T, backward=backward)
            if not chosen:
                continue
            color, marker, line, face = style[backward]
            values = np.maximum(seed_stack(chosen, "grad_rel_error").mean(0), ps.FLOOR)
            steps = np.asarray(chosen[0]["data"]["measured_step"])[:len(values)]
            ax.plot(steps, values, color=color, marker=marker, linestyle=line,
                    markerfacecolor=face, label=backward)
    ps.stamp(fig, stamp)
    name = f"{out[1]}_gradient_along_training_{ps.slug(forward)}.png"
    return ps.finish(fig, axes, os.path.join(out[0], name), dpi)


def plot_time_memory(runs, style, out, dpi, stamp):
    forwards = forward_rows(runs)
    Ts = sorted({r["T"] for r in runs})
    columns = (("step_seconds_median", 1e3, "training step (ms)"),
               ("backward_seconds_median", 1e3, "backward (ms)"),
               ("backward_peak_bytes", 2.0 ** -20, "backward peak memory (MiB)"))
    fig, axes = plt.subplots(len(forwards), 3, figsize=(13.5, 3.3 * len(forwards) + 0.9),
                             squeeze=False)
    device = runs[0]["device"]
    fig.suptitle(f"Time and memory per training step on {device} (median over the steps not "
                 "measured, mean over seeds)", fontsize=12)
    for row, forward in enumerate(forwards):
        for col, (key, scale, label) in enumerate(columns):
            ax = axes[row][col]
            ax.set_title(f"{forward_title(runs, forward)}: {label}", fontsize=10)
            for backward in ordered(r["backward"] for r in runs):
                color, marker, line, face = style[backward]
                values = [np.mean([r[key] for r in select(runs, forward=forward, T=T,
                                                          backward=backward)] or [np.nan])
                          for T in Ts]
                ax.plot(Ts, np.array(values) * scale, color=color, marker=marker,
                        linestyle=line, markerfacecolor=face, label=backward)
            ps.T_axis(ax, Ts)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("T (Sinkhorn iterations)")
            ax.grid(True, alpha=0.35)
    ps.stamp(fig, stamp)
    return ps.finish(fig, axes, os.path.join(out[0], f"{out[1]}_time_memory.png"), dpi)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="+", help="one or several logs of the same study (e.g. "
                        "one per --shard), read as one")
    parser.add_argument("--out-dir", help="default: the log's directory")
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--stamp", help="default: the log's tool version and start date")
    parser.add_argument("--table", action="store_true",
                        help="print the numbers per forward, backward and T instead of drawing")
    args = parser.parse_args()
    header, runs = read(args.log)
    if args.table:
        table(runs)
        return
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.log[0]))
    os.makedirs(out_dir, exist_ok=True)
    out = (out_dir, os.path.splitext(os.path.basename(args.log[0]))[0])
    stamp = args.stamp or (f"sinkgrad {header.get('tool_version', '')}, "
                           f"{header.get('started', '')[:10]}")
    style = ps.styles(ordered(r["backward"] for r in runs))
    written = []
    for forward in forward_rows(runs):
        chosen = select(runs, forward=forward)
        written.append(plot_loss_curves(chosen, forward, style, out, args.dpi, stamp))
        written.append(plot_along_training(chosen, forward, style, out, args.dpi, stamp))
        written.append(plot_mechanism(chosen, forward, style, out, args.dpi, stamp))
    written.append(plot_final_loss(runs, style, out, args.dpi, stamp))
    written.append(plot_agreement(runs, style, out, args.dpi, stamp))
    written.append(plot_time_memory(runs, style, out, args.dpi, stamp))
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
