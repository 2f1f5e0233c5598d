"""The figures of plot.py for logs that sweep the forward convention: the implicit solvers'
error against the unrolled gradient of the same forward, against T, one row per convention and
eps; and tilekernels' eps floor, the error at the largest T against eps."""

import matplotlib.pyplot as plt
import numpy as np

from plot_style import (FLOOR, T_axis, finish, mean_over_seeds, series_label, series_labels,
                        stamp, styles, varying_keys)


def forward_order(label):
    """columns_first, rows_first, tilekernels, then the other presets by name; each by eps."""
    name, _, eps = label.partition(" eps=")
    order = ["columns_first", "rows_first", "tilekernels"]
    return (order.index(name) if name in order else len(order), name, float(eps or 0))


def plot_forwards(runs, logits, study, made, path, dpi):
    """Error against the unrolled gradient of the same forward, against T: one row per forward
    (convention and eps), one column per n, one series per implicit solver configuration."""
    runs = [r for r in runs if r["logits"] == logits and r["solver"] != "unrolled"]
    forwards = sorted({r["forward"] for r in runs}, key=forward_order)
    cols = sorted({r["n"] for r in runs})
    varying = varying_keys(runs)
    varying["global"].discard("forward")
    labels = series_labels(runs, varying)
    style = styles(labels)
    fig, axes = plt.subplots(len(forwards), len(cols),
                             figsize=(4.2 * len(cols) + 0.6, 2.9 * len(forwards) + 0.9),
                             squeeze=False, sharex=True, sharey=True)
    fig.suptitle(f"{study}: error against the exact gradient of the same forward (unrolled), "
                 f"logits {logits}", fontsize=13)
    for i, forward in enumerate(forwards):
        for j, n in enumerate(cols):
            ax = axes[i][j]
            panel = [r for r in runs if r["forward"] == forward and r["n"] == n]
            Ts = sorted({r["T"] for r in panel})
            for label in labels:
                points = {r["T"]: r for r in panel if series_label(r, varying) == label}
                if not points:
                    continue
                ys = [max(mean_over_seeds([points[T]["err_unrolled"]]), FLOOR) if T in points
                      else np.nan for T in Ts]
                color, marker, ls, face = style[label]
                ax.plot(Ts, ys, marker=marker, color=color, ls=ls, mfc=face, label=label, lw=1.5,
                        ms=5, alpha=0.9)
            violation = [mean_over_seeds([r["violation"] for r in panel if r["T"] == T])
                         for T in Ts]
            ax.plot(Ts, [max(v, FLOOR) for v in violation], ls="--", color="0.45", lw=1.2,
                    label="forward: median violation of the inexact side")
            T_axis(ax, Ts)
            ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{forward},  n = {n}", fontsize=10)
            if i == len(forwards) - 1:
                ax.set_xlabel("forward iterations T")
            if j == 0:
                ax.set_ylabel("median rel. error vs unrolled")
    axes[0][0].set_ylim(bottom=max(FLOOR / 2, axes[0][0].get_ylim()[0]))
    stamp(fig, made)
    return finish(fig, axes, path, dpi)


def plot_eps_floor(runs, study, made, path, dpi):
    """tilekernels at its largest T (converged): each implicit solver's error against unrolled
    as a function of eps, one panel per n (eps = 0 drawn at the left edge)."""
    runs = [r for r in runs if r["convention"] == "tilekernels" and r["solver"] != "unrolled"]
    top = max(r["T"] for r in runs)
    runs = [r for r in runs if r["T"] == top]
    eps_values = sorted({r["eps"] for r in runs})
    positive = [e for e in eps_values if e > 0]
    zero_at = min(positive) / 100 if positive else 1e-12
    cols = sorted({r["n"] for r in runs})
    varying = varying_keys(runs)
    varying["global"].discard("forward")
    labels = series_labels(runs, varying)
    style = styles(labels)
    fig, axes = plt.subplots(1, len(cols), figsize=(4.2 * len(cols) + 0.6, 3.6), squeeze=False,
                             sharey=True)
    fig.suptitle(f"{study}: tilekernels at T = {top}: implicit gradients against unrolled, "
                 "against eps", fontsize=13)
    for j, n in enumerate(cols):
        ax = axes[0][j]
        for label in labels:
            points = [r for r in runs if r["n"] == n and series_label(r, varying) == label]
            if not points:
                continue
            xs = [e if e > 0 else zero_at for e in eps_values]
            ys = [max(mean_over_seeds([r["err_unrolled"] for r in points if r["eps"] == e]), FLOOR)
                  for e in eps_values]
            color, marker, ls, face = style[label]
            ax.plot(xs, ys, marker=marker, color=color, ls=ls, mfc=face, label=label, lw=1.5, ms=5)
        ax.plot(positive, positive, ls=":", color="0.45", lw=1.2, label="error = eps")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"n = {n}  (eps = 0 drawn at {zero_at:g})", fontsize=10)
        ax.set_xlabel("eps")
        if j == 0:
            ax.set_ylabel("median rel. error vs unrolled")
    stamp(fig, made)
    return finish(fig, axes, path, dpi)
