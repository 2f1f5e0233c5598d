#!/usr/bin/env python3
"""Pictures of a sinkgrad study log (the HDF5 file `sinkgrad run` writes).

    python3 experiments/plot.py LOG.h5 [--out-dir DIR] [--dpi N]

Writes PNG files into DIR (default: the log's directory), named after the log, and prints
their paths, one per line:

  <log>_error_vs_T_unrolled.png    per-matrix relative error of dL/dM against the exact
                                   gradient of the T-step forward, per solver, against T:
                                   median (line), median to p95 (band), max (thin line); a red
                                   ring marks a point where some matrices were not solved ok
  <log>_error_vs_T_converged.png   the same against the gradient at the converged forward
  <log>_status.png                 fraction of matrices whose status is not ok, per solver
  <log>_cg_<solver>_<logits>.png   CG convergence: relative residual and the error of every
                                   iterate against both references, per CG iteration
  <log>_time_vs_error.png          solve time per matrix against the error; each series' points
                                   of the smallest and largest T are labelled

Panels: one per (logit distribution, n) that the log holds. A series is a solver with its
options (and precision and device when the log has several). Several seeds are averaged. Each
figure is stamped with --stamp (default: the log's tool version and date). The log's schema is
in docs/experiments.md.

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
                and not os.environ.get("SINKGRAD_PYTHON_REEXEC"):
            os.environ["SINKGRAD_PYTHON_REEXEC"] = "1"
            os.execv(system, [system] + sys.argv)
        sys.exit(f"plot.py: {error}; install python3-numpy python3-h5py python3-matplotlib")


_import_or_reexec()

import h5py  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
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
        made = (f"sinkgrad {text(log.attrs.get('tool_version', '?'))}, "
                f"{text(log.attrs.get('started', ''))[:10]}")
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
                run["max_" + ref] = float(group[group_name].attrs["frobenius_max"])
            run["not_ok"] = 1.0 - run["status"][0] / max(1, run["batch"])
            if "convergence" in group:
                c = group["convergence"]
                run["residual"] = c["relative_residual_median"][:]
                for ref in REFERENCES:
                    key = f"iterate_error_vs_{ref}_median"
                    run["iterate_" + ref] = c[key][:] if key in c else None
            runs.append(run)
    if not runs:
        raise SystemExit(f"plot.py: {path} holds no finished run")
    return study, made, runs


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
    for key in ("precision", "device"):
        if key in varying["global"]:
            label += f" {run[key]}"
    return label


def varying_keys(runs):
    per_solver = {}
    for solver in {r["solver"] for r in runs}:
        sets = [parse_options(r["options"]) for r in runs if r["solver"] == solver]
        names = set().union(*sets)
        per_solver[solver] = {k for k in names if len({s.get(k) for s in sets}) > 1}
    return {"global": {k for k in ("precision", "device") if len({r[k] for r in runs}) > 1},
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


def logits_name(source):
    """'file(../data/logits.h5, mhc_like_n4)' -> 'mhc_like_n4 (logits.h5)'; generated
    distributions keep their spelling."""
    match = re.fullmatch(r"file\((.*),\s*([^,]+)\)", source)
    if match:
        return f"{match.group(2).strip()} ({os.path.basename(match.group(1).strip())})"
    return source


def logits_slug(source):
    """File name part: the dataset of a file source, else the spelling ('uniform_0_4')."""
    match = re.fullmatch(r"file\((.*),\s*([^,]+)\)", source)
    return slug(match.group(2).strip() if match else source)


def panels(runs):
    """The (logits, n) pairs the log holds, in a grid without empty cells: one row per logit
    distribution when every one has the same sizes, else wrapped three to a row."""
    pairs = sorted({(r["logits"], r["n"]) for r in runs}, key=lambda p: (natural(p[0]), p[1]))
    rows, cols = facets(runs)
    if len(pairs) == len(rows) * len(cols):
        return pairs, len(rows), len(cols)
    ncols = min(3, len(pairs))
    return pairs, (len(pairs) + ncols - 1) // ncols, ncols


def family_label(label):
    """The label without its numeric options: 'cg_plain (max_iterations=4 schur)' ->
    'cg_plain (schur)'."""
    out = re.sub(r"\s*\w+=(?:-?[\d.e+-]+|auto)\b", "", label)
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


def grid(pairs, nrows, ncols, title, ylabel, xlabel, width=4.2, height=3.4):
    """One panel per (logits, n) pair; cells past the last pair are removed."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols + 0.6, height * nrows + 0.9),
                             squeeze=False, sharey=True)
    fig.suptitle(title, fontsize=13)
    for k, ax in enumerate(axes.flat):
        if k >= len(pairs):
            fig.delaxes(ax)
            continue
        logits, n = pairs[k]
        ax.set_title(f"logits {logits_name(logits)},  n = {n}", fontsize=10)
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
        ax.set_xlabel(xlabel)
        if k % ncols == 0:
            ax.set_ylabel(ylabel)
    return fig, [ax for k, ax in enumerate(axes.flat) if k < len(pairs)]


def stamp(fig, made):
    fig.text(0.995, 0.002, made, ha="right", va="bottom", fontsize=7, color="0.4")


def finish(fig, axes, path, dpi, handles=None):
    """Shared legend on the right (the panels' labelled lines unless handles are given)."""
    labels = []
    if handles is None:
        handles = []
        for ax in np.ravel(axes):
            for h, l in zip(*ax.get_legend_handles_labels()):
                if l not in labels:
                    handles.append(h)
                    labels.append(l)
    else:
        labels = [h.get_label() for h in handles]
    fig.tight_layout(rect=(0, 0.015, 1, 0.97))
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=9,
                        frameon=False)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def mean_over_seeds(values):
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else np.nan


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
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(Ts)
        ax.set_xticklabels([str(T) for T in Ts], fontsize=8)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
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
        ax.set_xscale("log")
        ax.set_xticks(Ts)
        ax.set_xticklabels([str(T) for T in Ts], fontsize=7)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
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


def slug(label):
    """'cg_plain (schur)' -> 'cg_plain_schur', 'uniform(0, 4)' -> 'uniform_0_4'."""
    out = re.sub(r"[^A-Za-z0-9.]+", "_", label).strip("_")
    return out.replace(".", "p")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="HDF5 log written by `sinkgrad run`")
    parser.add_argument("--out-dir", help="where the PNGs go (default: next to the log)")
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--stamp", help="text in each figure's corner saying what made it "
                        "(default: the log's tool version and date)")
    args = parser.parse_args(argv)
    if not os.path.exists(args.log):
        raise SystemExit(f"plot.py: no such file: {args.log}")
    study, made, runs = load_runs(args.log)
    made = args.stamp or made
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.log))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, os.path.splitext(os.path.basename(args.log))[0])
    written = []
    for ref in REFERENCES:
        written.append(plot_error_vs_T(runs, ref, study, made, f"{stem}_error_vs_T_{ref}.png",
                                       args.dpi))
    written.append(plot_status(runs, study, made, f"{stem}_status.png", args.dpi))
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
                    list(longest.values()), family, logits, study, made,
                    f"{stem}_cg_{slug(family)}_{logits_slug(logits)}.png",
                    args.dpi))
    written.append(plot_time_vs_error(runs, study, made, f"{stem}_time_vs_error.png", args.dpi))
    try:
        for path in written:
            print(path)
    except BrokenPipeError:  # e.g. piped into head
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
