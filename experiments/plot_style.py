"""Labels, styles, panel layout and figure scaffolding shared by plot.py's figures (see
plot.py for what each figure shows). Imported by plot.py after it has found an interpreter with
numpy, h5py and matplotlib."""

import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

REFERENCES = {
    "unrolled": ("error_vs_unrolled", "exact gradient of the T-step forward (unrolled)"),
    "converged": ("error_vs_converged", "gradient at the converged forward"),
}
FLOOR = 1e-17  # exact zeros are drawn here on log axes
MARKERS = "osD^v<>pP*Xh"


def parse_options(options):
    return dict(item.partition("=")[::2] for item in options.split())


def series_label(run, varying):
    """Solver, then only what tells its series apart in this log: the options that vary
    between its runs, and precision, device and forward convention when the log has several."""
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


def T_axis(ax, Ts, fontsize=8):
    """A logarithmic T axis labelled at exactly the T values of the study."""
    ax.set_xscale("log")
    ax.set_xticks(Ts)
    ax.set_xticklabels([str(T) for T in Ts], fontsize=fontsize)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


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


def slug(label):
    """'cg_plain (schur)' -> 'cg_plain_schur', 'uniform(0, 4)' -> 'uniform_0_4'."""
    out = re.sub(r"[^A-Za-z0-9.]+", "_", label).strip("_")
    return out.replace(".", "p")
