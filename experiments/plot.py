#!/usr/bin/env python3
"""Pictures of a sinkgrad study log (the HDF5 file `sinkgrad run` writes).

    python3 experiments/plot.py LOG.h5 [--out-dir DIR] [--dpi N]

Writes PNG files into DIR (default: the log's directory), named after the log, and prints
their paths, one per line:

  <log>_error_vs_T_unrolled.png    median per-matrix relative error of dL/dM against the exact
                                   gradient of the T-step forward, per solver, against T
  <log>_error_vs_T_converged.png   the same against the gradient at the converged forward
  <log>_cg_<solver>_<logits>.png   CG convergence: relative residual and the error of every
                                   iterate against both references, per CG iteration
  <log>_time_vs_error.png          solve time per matrix against the error

Panels: one row per logit distribution, one column per matrix size n. A series is a solver
with its options (and precision and device when the log has several). Several seeds are
averaged. The log's schema is in docs/experiments.md.

Needs numpy, h5py and matplotlib (Debian: python3-numpy python3-h5py python3-matplotlib).
"""

import argparse
import os
import re
import sys


def _import_or_reexec():
    """Imports the plotting stack; on a machine where `python3` is not the system Python
    (pyenv, venv) and lacks the Debian packages, re-runs this script with /usr/bin/python3."""
    try:
        import h5py  # noqa: F401
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as error:
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("SINKGRAD_PLOT_REEXEC"):
            os.environ["SINKGRAD_PLOT_REEXEC"] = "1"
            os.execv(system, [system] + sys.argv)
        sys.exit(f"plot.py: {error}; install python3-numpy python3-h5py python3-matplotlib")


_import_or_reexec()

import h5py  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
import numpy as np  # noqa: E402

REFERENCES = {
    "unrolled": ("error_vs_unrolled", "exact gradient of the T-step forward (unrolled)"),
    "converged": ("error_vs_converged", "gradient at the converged forward"),
}
FLOOR = 1e-17  # exact zeros are drawn here on log axes
MARKERS = "osD^v<>pP*Xh"


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def load_runs(path):
    """One dict per finished run with its parameters and the numbers the plots need."""
    runs = []
    with h5py.File(path, "r") as log:
        if text(log.attrs.get("schema", "")) != "sinkgrad-study-log":
            raise SystemExit(f"plot.py: {path} is not a sinkgrad study log")
        study = text(log.attrs.get("study_name", "")) or os.path.splitext(os.path.basename(path))[0]
        for name, group in log["runs"].items():
            a = group.attrs
            if int(a.get("complete", 0)) != 1:
                continue
            run = {
                "n": int(a["n"]), "batch": int(a["batch"]), "logits": text(a["logits_source"]),
                "seed": int(a["seed"]), "T": int(a["T"]), "precision": text(a["precision"]),
                "solver": text(a["solver"]), "options": text(a["options"]),
                "device": text(a["device"]), "solve_seconds": float(a["solve_seconds"]),
                "solve_seconds_min": float(a["solve_seconds_min"]),
                "violation": float(a["forward_violation_median"]),
                "status": [int(x) for x in a["status_counts"]],
            }
            for ref, (group_name, _) in REFERENCES.items():
                run["err_" + ref] = float(group[group_name].attrs["frobenius_median"])
                run["p95_" + ref] = float(group[group_name].attrs["frobenius_p95"])
            if "convergence" in group:
                c = group["convergence"]
                run["residual"] = c["relative_residual_median"][:]
                for ref in REFERENCES:
                    key = f"iterate_error_vs_{ref}_median"
                    run["iterate_" + ref] = c[key][:] if key in c else None
            runs.append(run)
    if not runs:
        raise SystemExit(f"plot.py: {path} holds no finished run")
    return study, runs


def short_options(options):
    """'max_iterations=auto system=schur tolerance=auto' -> 'schur' (defaults left out)."""
    parts = []
    for item in options.split():
        key, _, value = item.partition("=")
        if value == "auto":
            continue
        parts.append(value if key == "system" else f"{key}={value}")
    return " ".join(parts)


def series_label(run, varying):
    label = run["solver"]
    options = short_options(run["options"])
    if options:
        label += f" ({options})"
    for key in ("precision", "device"):
        if key in varying:
            label += f" {run[key]}"
    return label


def varying_keys(runs):
    return {k for k in ("precision", "device") if len({r[k] for r in runs}) > 1}


def natural(value):
    """Sort key that orders 'uniform(0, 4)' before 'uniform(0, 10)'."""
    parts = re.split(r"(-?\d+(?:\.\d+)?)", str(value))
    return [(0, float(p), "") if re.fullmatch(r"-?\d+(?:\.\d+)?", p) else (1, 0.0, p) for p in parts]


def facets(runs):
    rows = sorted({r["logits"] for r in runs}, key=natural)
    cols = sorted({r["n"] for r in runs})
    return rows, cols


def styles(labels):
    """label -> (colour, marker, line style, marker face): direct solves of the systems that CG
    also solves are drawn dashed with open markers, so that coinciding curves stay visible."""
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    out = {}
    for i, label in enumerate(labels):
        color = cmap(i % cmap.N)
        dashed = label.startswith("direct")
        out[label] = (color, MARKERS[i % len(MARKERS)], "--" if dashed else "-",
                      "none" if dashed else color)
    return out


def grid(rows, cols, title, ylabel, xlabel, width=4.2, height=3.4, sharey=True):
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(width * len(cols) + 2.8, height * len(rows) + 0.9),
                             squeeze=False, sharex=True, sharey=sharey)
    fig.suptitle(title, fontsize=13)
    for i, row in enumerate(rows):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            ax.set_title(f"logits {row},  n = {col}", fontsize=10)
            ax.grid(True, which="major", alpha=0.35)
            ax.grid(True, which="minor", alpha=0.12)
            if i == len(rows) - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
    return fig, axes


def finish(fig, axes, path, dpi, handles=None):
    """Shared legend on the right (the panels' labelled lines unless handles are given)."""
    labels = []
    if handles is None:
        handles = []
        for ax in axes.flat:
            for h, l in zip(*ax.get_legend_handles_labels()):
                if l not in labels:
                    handles.append(h)
                    labels.append(l)
    else:
        labels = [h.get_label() for h in handles]
    fig.legend(handles, labels, loc="center right", fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 2.6 / fig.get_figwidth(), 0.97))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def mean_over_seeds(values):
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else np.nan


def plot_error_vs_T(runs, reference, study, path, dpi):
    varying = varying_keys(runs)
    if reference == "unrolled":  # the reference itself (error 0) would only flatten the axis
        runs = [r for r in runs if r["solver"] != "unrolled" or r["precision"] != "float64"]
    rows, cols = facets(runs)
    labels = sorted({series_label(r, varying) for r in runs})
    style = styles(labels)
    _, description = REFERENCES[reference]
    fig, axes = grid(rows, cols, f"{study}: gradient error against the {description}",
                     "median relative error ||dM - ref||_F / ||ref||_F", "forward iterations T")
    for i, row in enumerate(rows):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            panel = [r for r in runs if r["logits"] == row and r["n"] == col]
            Ts = sorted({r["T"] for r in panel})
            for label in labels:
                points = [r for r in panel if series_label(r, varying) == label]
                if not points:
                    continue
                ys = [mean_over_seeds([r["err_" + reference] for r in points if r["T"] == T]) for T in Ts]
                ys = [max(y, FLOOR) if np.isfinite(y) else np.nan for y in ys]
                color, marker, ls, face = style[label]
                ax.plot(Ts, ys, marker=marker, color=color, ls=ls, mfc=face, label=label, lw=1.6,
                        ms=6 if face == "none" else 5, alpha=0.9)
            violation = [mean_over_seeds([r["violation"] for r in panel if r["T"] == T]) for T in Ts]
            ax.plot(Ts, [max(v, FLOOR) for v in violation], ls="--", color="0.45", lw=1.2,
                    label="forward: median max_j |c_j - 1|")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(Ts)
            ax.set_xticklabels([str(T) for T in Ts], fontsize=8)
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    axes[0][0].set_ylim(bottom=max(FLOOR / 2, axes[0][0].get_ylim()[0]))
    return finish(fig, axes, path, dpi)


def plot_cg_convergence(runs, key, logits, study, path, dpi):
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
    fig, axes = plt.subplots(len(quantities), len(cols),
                             figsize=(4.2 * len(cols) + 1.8, 2.9 * len(quantities) + 0.9),
                             squeeze=False, sharex="col", sharey="row")
    fig.suptitle(f"{study}: CG convergence of {key}, logits {logits} (medians over the batch)",
                 fontsize=13)
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
    return finish(fig, axes, path, dpi, handles)


def plot_time_vs_error(runs, study, path, dpi):
    varying = varying_keys(runs)
    cols = sorted({r["n"] for r in runs})
    labels = sorted({series_label(r, varying) for r in runs})
    style = styles(labels)
    refs = list(REFERENCES)
    fig, axes = plt.subplots(len(refs), len(cols), figsize=(4.2 * len(cols) + 2.8, 3.4 * len(refs) + 0.9),
                             squeeze=False, sharey="row")
    fig.suptitle(f"{study}: solve time (fastest of the timed repeats) against gradient error, "
                 "every T and logit distribution",
                 fontsize=13)
    for i, ref in enumerate(refs):
        for j, n in enumerate(cols):
            ax = axes[i][j]
            for label in labels:
                points = [r for r in runs if r["n"] == n and series_label(r, varying) == label]
                if not points:
                    continue
                color, marker, _, face = style[label]
                xs = [r["solve_seconds_min"] / r["batch"] * 1e6 for r in points]
                ys = [max(r["err_" + ref], FLOOR) for r in points]
                ax.scatter(xs, ys, edgecolors=color, facecolors=face, marker=marker, s=24, alpha=0.8,
                           label=label)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
            ax.set_title(f"n = {n}", fontsize=10)
            if i == len(refs) - 1:
                ax.set_xlabel("solve time per matrix [microseconds]")
            if j == 0:
                ax.set_ylabel(f"median error vs {ref}")
    return finish(fig, axes, path, dpi)


def slug(label):
    """'cg_plain (schur)' -> 'cg_plain_schur', 'uniform(0, 4)' -> 'uniform_0_4'."""
    out = re.sub(r"[^A-Za-z0-9.]+", "_", label).strip("_")
    return out.replace(".", "p")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="HDF5 log written by `sinkgrad run`")
    parser.add_argument("--out-dir", help="where the PNGs go (default: next to the log)")
    parser.add_argument("--dpi", type=int, default=110)
    args = parser.parse_args(argv)
    if not os.path.exists(args.log):
        raise SystemExit(f"plot.py: no such file: {args.log}")
    study, runs = load_runs(args.log)
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.log))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, os.path.splitext(os.path.basename(args.log))[0])
    written = []
    for ref in REFERENCES:
        written.append(plot_error_vs_T(runs, ref, study, f"{stem}_error_vs_T_{ref}.png", args.dpi))
    varying = varying_keys(runs)
    iterative = sorted({series_label(r, varying) for r in runs if "residual" in r})
    for key in iterative:
        for logits in facets(runs)[0]:
            subset = [r for r in runs if "residual" in r and series_label(r, varying) == key
                      and r["logits"] == logits]
            if subset:
                written.append(plot_cg_convergence(
                    subset, key, logits, study, f"{stem}_cg_{slug(key)}_{slug(logits)}.png", args.dpi))
    written.append(plot_time_vs_error(runs, study, f"{stem}_time_vs_error.png", args.dpi))
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
