"""The figures of plot.py: error against T (median, p95 band, max, not-ok rings), solve
status, CG convergence and time against error."""

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
from matplotlib.lines import Line2D
import numpy as np

from plot_style import (FLOOR, MARKERS, REFERENCES, T_axis, finish, grid, logits_name,
                        mean_over_seeds, natural, panels, series_label, series_labels, stamp,
                        styles, varying_keys)

NOT_OK_RING = dict(facecolors="none", edgecolors="red", s=110, linewidths=1.3, zorder=5)


def plot_error_vs_T(runs, reference, study, made, path, dpi):
    varying = varying_keys(runs)
    if reference == "unrolled":  # the reference itself (error 0) would only flatten the axis
        runs = [r for r in runs if r["solver"] != "unrolled" or r["precision"] != "float64"]
    pairs, nrows, ncols = panels(runs)
    labels = series_labels(runs, varying)
    style = styles(labels)
    _, description = REFERENCES[reference]
    fig, axes = grid(pairs, nrows, ncols, f"{study}: gradient error against the {description}",
                     "relative error ||dM - ref||_F / ||ref||_F", "forward iterations T")
    rings = False
    for ax, (logits, n) in zip(axes, pairs):
        panel = [r for r in runs if r["logits"] == logits and r["n"] == n]
        Ts = sorted({r["T"] for r in panel})
        for label in labels:
            points = [r for r in panel if series_label(r, varying) == label]
            if not points:
                continue
            xs = sorted({r["T"] for r in points})

            def series(key):
                ys = [mean_over_seeds([r[key] for r in points if r["T"] == T]) for T in xs]
                return np.array([max(y, FLOOR) if np.isfinite(y) else np.nan for y in ys])

            color, marker, ls, face = style[label]
            median = series("err_" + reference)
            ax.plot(xs, median, marker=marker, color=color, ls=ls, mfc=face, label=label, lw=1.6,
                    ms=6 if face == "none" else 5, alpha=0.9)
            ax.fill_between(xs, median, series("p95_" + reference), color=color, alpha=0.12,
                            lw=0)
            ax.plot(xs, series("max_" + reference), color=color, ls=ls, lw=0.6, alpha=0.6)
            not_ok = [T for T in xs
                      if mean_over_seeds([r["not_ok"] for r in points if r["T"] == T]) > 0]
            if not_ok:
                rings = True
                ax.scatter(not_ok, [median[xs.index(T)] for T in not_ok], **NOT_OK_RING)
        violation = [mean_over_seeds([r["violation"] for r in panel if r["T"] == T]) for T in Ts]
        ax.plot(Ts, [max(v, FLOOR) for v in violation], ls="--", color="0.45", lw=1.2,
                label="forward: median max_j |c_j - 1|")
        T_axis(ax, Ts)
        ax.set_yscale("log")
    axes[0].set_ylim(bottom=max(FLOOR / 2, axes[0].get_ylim()[0]))
    handles = []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in [x.get_label() for x in handles]:
                handles.append(h)
    handles.append(Line2D([], [], color="0.3", lw=0.6, label="thin: max over the batch"))
    handles.append(matplotlib.patches.Patch(color="0.3", alpha=0.15,
                                            label="band: median to 95th percentile"))
    if rings:
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="red", ms=10,
                              label="some matrices not ok (see _status.png)"))
    stamp(fig, made)
    return finish(fig, axes, path, dpi, handles)


def plot_status(runs, study, made, path, dpi):
    """One small panel per solver configuration: the fraction of matrices whose status is not
    ok, against T, one line per (logits, n)."""
    varying = varying_keys(runs)
    configs = series_labels(runs, varying)
    ncols = min(4, len(configs))
    nrows = (len(configs) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols + 0.6, 2.6 * nrows + 0.9),
                             squeeze=False, sharey=True)
    fig.suptitle(f"{study}: fraction of matrices whose solve status is not ok", fontsize=13)
    cmap = plt.get_cmap("tab10")
    keys = sorted({(r["logits"], r["n"]) for r in runs}, key=lambda p: (natural(p[0]), p[1]))
    used = []
    for k, ax in enumerate(axes.flat):
        if k >= len(configs):
            fig.delaxes(ax)
            continue
        used.append(ax)
        mine = [r for r in runs if series_label(r, varying) == configs[k]]
        ax.set_title(configs[k], fontsize=9)
        Ts = sorted({r["T"] for r in mine})
        for m, (logits, n) in enumerate(keys):
            points = [r for r in mine if r["logits"] == logits and r["n"] == n]
            if not points:
                continue
            xs = sorted({r["T"] for r in points})
            ys = [mean_over_seeds([r["not_ok"] for r in points if r["T"] == T]) for T in xs]
            ax.plot(xs, ys, color=cmap(m % 10), marker=MARKERS[m % len(MARKERS)], ms=4, lw=1.2,
                    alpha=0.85, label=f"{logits_name(logits)}, n = {n}")
        T_axis(ax, Ts, fontsize=7)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(True, alpha=0.3)
        if k >= len(configs) - ncols:
            ax.set_xlabel("forward iterations T")
        if k % ncols == 0:
            ax.set_ylabel("not-ok fraction")
    stamp(fig, made)
    return finish(fig, np.array(used), path, dpi)


def plot_cg_convergence(runs, key, logits, study, made, path, dpi):
    """One CG configuration and logit distribution: per CG iteration k, the relative residual
    and the error of the k-th iterate against both references (rows), per n (columns), one
    line per forward iteration count T."""
    cols = sorted({r["n"] for r in runs})
    Ts = sorted({r["T"] for r in runs})
    cmap = plt.get_cmap("viridis")
    colors = {T: cmap(k / max(1, len(Ts) - 1) * 0.92) for k, T in enumerate(Ts)}
    quantities = [("residual", "relative residual\n||r_k|| / ||r_0||", 0),
                  ("iterate_unrolled", "error of iterate k vs\nunrolled (T-step) gradient", 1),
                  ("iterate_converged", "error of iterate k vs\nconverged gradient", 1)]
    # A quantity the log lacks (iterate errors off) gets no row rather than an empty one.
    quantities = [q for q in quantities if any(r.get(q[0]) is not None and len(r.get(q[0])) > 0
                                               for r in runs)]
    fig, axes = plt.subplots(len(quantities), len(cols),
                             figsize=(4.2 * len(cols) + 0.6, 2.9 * len(quantities) + 0.9),
                             squeeze=False, sharex="col", sharey="row")
    fig.suptitle(f"{study}: CG convergence of {key}, logits {logits_name(logits)} "
                 "(medians over the batch)", fontsize=13)
    for i, (name, ylabel, first_k) in enumerate(quantities):
        for j, n in enumerate(cols):
            ax = axes[i][j]
            for T in Ts:
                points = [r for r in runs if r["n"] == n and r["T"] == T]
                y = points[0].get(name) if points else None
                if y is None or len(y) == 0:
                    continue
                ks = np.arange(first_k, first_k + len(y))
                ax.plot(ks, np.maximum(y, FLOOR), color=colors[T], lw=1.5, marker=".", ms=4)
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            if i == 0:
                ax.set_title(f"n = {n}", fontsize=10)
            if i == len(quantities) - 1:
                ax.set_xlabel("CG iteration k")
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=9)
    handles = [Line2D([], [], color=colors[T], lw=2, label=f"T = {T}") for T in Ts]
    stamp(fig, made)
    return finish(fig, axes, path, dpi, handles)


def plot_time_vs_error(runs, study, made, path, dpi):
    """Per series and logit distribution, the points of its smallest and largest T carry their
    T (lines between the points would mostly draw timing noise)."""
    varying = varying_keys(runs)
    cols = sorted({r["n"] for r in runs})
    labels = series_labels(runs, varying)
    style = styles(labels)
    refs = list(REFERENCES)
    fig, axes = plt.subplots(len(refs), len(cols), figsize=(4.2 * len(cols) + 0.6, 3.4 * len(refs) + 0.9),
                             squeeze=False, sharey="row")
    fig.suptitle(f"{study}: solve time (fastest of the timed repeats) against median gradient "
                 "error, every T and logit distribution",
                 fontsize=13)
    for i, ref in enumerate(refs):
        for j, n in enumerate(cols):
            ax = axes[i][j]
            for label in labels:
                for logits in sorted({r["logits"] for r in runs}, key=natural):
                    points = sorted((r for r in runs if r["n"] == n and r["logits"] == logits
                                     and series_label(r, varying) == label), key=lambda r: r["T"])
                    if not points:
                        continue
                    color, marker, _, face = style[label]
                    xs = [r["solve_seconds_min"] / r["batch"] * 1e6 for r in points]
                    ys = [max(r["err_" + ref], FLOOR) for r in points]
                    ax.scatter(xs, ys, edgecolors=color, facecolors=face, marker=marker, s=24,
                               alpha=0.8, label=label)
                    for k in {0, len(points) - 1}:
                        ax.annotate(f"T={points[k]['T']}", (xs[k], ys[k]), fontsize=6,
                                    color=color, xytext=(3, 2), textcoords="offset points")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.grid(True, alpha=0.3)
            ax.set_title(f"n = {n}", fontsize=10)
            if i == len(refs) - 1:
                ax.set_xlabel("solve time per matrix [microseconds]")
            if j == 0:
                ax.set_ylabel(f"median error vs {ref}")
    stamp(fig, made)
    return finish(fig, axes, path, dpi)
