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
  <log>_forwards_<logits>.png      (logs with several forward conventions) the error against
                                   the unrolled gradient of the same forward, per solver,
                                   against T: one row per convention and eps
  <log>_eps_floor.png              (logs with tilekernels at several eps) the implicit
                                   solvers' error against unrolled at the largest T, against eps

Panels: one row per logit distribution, one column per matrix size n. A series is a solver
with its options (and precision, device and forward convention when the log has several). Several seeds are
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
                # logs written before the conventions existed ran the default forward
                "convention": text(a.get("forward", "columns_first")),
                "eps": float(a.get("eps", 0.0)),
            }
            run["forward"] = run["convention"] + (f" eps={run['eps']:g}" if run["eps"] else "")
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


def parse_options(options):
    return dict(item.partition("=")[::2] for item in options.split())


def series_label(run, varying):
    """Solver, then only what tells its series apart in this log: the options that vary
    between its runs, and precision and device when the log has several."""
    label = run["solver"]
    options = parse_options(run["options"])
    shown = [options[k] if k == "system" else f"{k}={options[k]}"
             for k in sorted(varying["options"].get(run["solver"], ())) if k in options]
    if shown:
        label += f" ({' '.join(shown)})"
    for key in ("precision", "device", "forward"):
        if key in varying["global"]:
            label += f" {run[key]}"
    return label


def varying_keys(runs):
    per_solver = {}
    for solver in {r["solver"] for r in runs}:
        sets = [parse_options(r["options"]) for r in runs if r["solver"] == solver]
        names = set().union(*sets)
        per_solver[solver] = {k for k in names if len({s.get(k) for s in sets}) > 1}
    return {"global": {k for k in ("precision", "device", "forward")
                       if len({r[k] for r in runs}) > 1},
            "options": per_solver}


def series_labels(runs, varying):
    return sorted({series_label(r, varying) for r in runs}, key=natural)


def natural(value):
    """Sort key that orders 'uniform(0, 4)' before 'uniform(0, 10)'."""
    parts = re.split(r"(-?\d+(?:\.\d+)?)", str(value))
    return [(0, float(p), "") if re.fullmatch(r"-?\d+(?:\.\d+)?", p) else (1, 0.0, p) for p in parts]


def facets(runs):
    rows = sorted({r["logits"] for r in runs}, key=natural)
    cols = sorted({r["n"] for r in runs})
    return rows, cols


def family_label(label):
    """The label without its numeric options: 'cg_plain (max_iterations=4 schur)' ->
    'cg_plain (schur)'."""
    out = re.sub(r"\s*\w+=-?[\d.e+-]+", "", label)
    return out.replace(" ()", "").replace("( ", "(")


FAMILY_MAPS = ["Blues", "Oranges", "Greens", "Reds", "Purples", "Greys", "YlOrBr", "BuPu"]


def styles(labels):
    """label -> (colour, marker, line style, marker face). Series that differ only in a
    numeric option (max_iterations=1, 2, 4, ...) form a family: one marker, shades of one
    colour map, light to dark. Direct solves (the same systems CG solves) are dashed with open
    markers, so that coinciding curves stay visible."""
    families = {}
    for label in labels:
        families.setdefault(family_label(label), []).append(label)
    single = all(len(members) == 1 for members in families.values())
    tab = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    out = {}
    for f, members in enumerate(families.values()):
        for k, label in enumerate(members):
            if single:
                color = tab(f % tab.N)
            else:
                color = plt.get_cmap(FAMILY_MAPS[f % len(FAMILY_MAPS)])(
                    0.4 + 0.55 * k / max(1, len(members) - 1))
            dashed = label.startswith("direct")
            out[label] = (color, MARKERS[f % len(MARKERS)], "--" if dashed else "-",
                          "none" if dashed else color)
    return out


def grid(rows, cols, title, ylabel, xlabel, width=4.2, height=3.4, sharey=True):
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(width * len(cols) + 0.6, height * len(rows) + 0.9),
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
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=9,
                        frameon=False)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
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
    labels = series_labels(runs, varying)
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
                             figsize=(4.2 * len(cols) + 0.6, 2.9 * len(quantities) + 0.9),
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
    labels = series_labels(runs, varying)
    style = styles(labels)
    refs = list(REFERENCES)
    fig, axes = plt.subplots(len(refs), len(cols), figsize=(4.2 * len(cols) + 0.6, 3.4 * len(refs) + 0.9),
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


def forward_order(label):
    """columns_first, rows_first, tilekernels; each by eps."""
    name, _, eps = label.partition(" eps=")
    return (["columns_first", "rows_first", "tilekernels"].index(name), float(eps or 0))


def plot_forwards(runs, logits, study, path, dpi):
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
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(Ts)
            ax.set_xticklabels([str(T) for T in Ts], fontsize=8)
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{forward},  n = {n}", fontsize=10)
            if i == len(forwards) - 1:
                ax.set_xlabel("forward iterations T")
            if j == 0:
                ax.set_ylabel("median rel. error vs unrolled")
    axes[0][0].set_ylim(bottom=max(FLOOR / 2, axes[0][0].get_ylim()[0]))
    return finish(fig, axes, path, dpi)


def plot_eps_floor(runs, study, path, dpi):
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
    # CG convergence: one figure per solver configuration and logit distribution. Series that
    # differ only in max_iterations share one figure, drawn from the run with the most
    # iterations (CG from zero is deterministic: a smaller budget's iterates are its prefix).
    iterative = [r for r in runs if "residual" in r]
    for family in sorted({family_label(series_label(r, varying)) for r in iterative}, key=natural):
        members = [r for r in iterative if family_label(series_label(r, varying)) == family]
        for logits in facets(members)[0]:
            longest = {}
            for r in members:
                if r["logits"] != logits:
                    continue
                key = (r["n"], r["T"])
                if key not in longest or len(r["residual"]) > len(longest[key]["residual"]):
                    longest[key] = r
            if longest:
                written.append(plot_cg_convergence(
                    list(longest.values()), family, logits, study,
                    f"{stem}_cg_{slug(family)}_{slug(logits)}.png", args.dpi))
    written.append(plot_time_vs_error(runs, study, f"{stem}_time_vs_error.png", args.dpi))
    if len({r["forward"] for r in runs}) > 1:
        for logits in facets(runs)[0]:
            written.append(plot_forwards(runs, logits, study,
                                         f"{stem}_forwards_{slug(logits)}.png", args.dpi))
    if len({r["eps"] for r in runs if r["convention"] == "tilekernels"}) > 1:
        written.append(plot_eps_floor(runs, study, f"{stem}_eps_floor.png", args.dpi))
    try:
        for path in written:
            print(path)
    except BrokenPipeError:  # e.g. piped into head
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
