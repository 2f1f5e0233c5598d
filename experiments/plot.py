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
  <log>_status.png                 fraction of matrices whose status is not ok (nor fallback),
                                   per solver
  <log>_cg_<solver>_<logits>.png   CG convergence: relative residual and the error of every
                                   iterate against both references, per CG iteration
  <log>_time_vs_error.png          solve time per matrix against the error; each series' points
                                   of the smallest and largest T are labelled
  <log>_forwards_<logits>.png      (logs with several forward conventions) the error against
                                   the unrolled gradient of the same forward, per solver,
                                   against T: one row per convention and eps
  <log>_eps_floor.png              (logs with tilekernels at several eps) the implicit
                                   solvers' error against unrolled at the largest T, against eps

Panels: one per (logit distribution, n) that the log holds. A series is a solver with its
options (and precision, device and forward convention when the log has several). Several seeds are averaged. Each
figure is stamped with --stamp (default: the log's tool version and date). The log's schema is
in docs/experiments.md.

Needs numpy, h5py and matplotlib (Debian: python3-numpy python3-h5py python3-matplotlib).
"""

import argparse
import os
import sys

# The drawing and the interpreter lookup live next to this file (experiments/, or
# share/sinkgrad/ when installed).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from system_python import require_modules  # noqa: E402

require_modules(("h5py", "matplotlib", "numpy"), "python3-numpy python3-h5py python3-matplotlib")

import h5py  # noqa: E402

from plot_forwards import plot_eps_floor, plot_forwards  # noqa: E402
from plot_figures import (plot_cg_convergence, plot_error_vs_T, plot_status,  # noqa: E402
                          plot_time_vs_error)
from plot_style import (REFERENCES, facets, family_label, logits_slug, natural,  # noqa: E402
                        series_label, slug, varying_keys)


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
                # logs written before the conventions existed ran the default forward
                "convention": text(a.get("forward", "columns_first")),
                "eps": float(a.get("eps", 0.0)),
            }
            run["forward"] = run["convention"] + (f" eps={run['eps']:g}" if run["eps"] else "")
            for ref, (group_name, _) in REFERENCES.items():
                run["err_" + ref] = float(group[group_name].attrs["frobenius_median"])
                run["p95_" + ref] = float(group[group_name].attrs["frobenius_p95"])
                run["max_" + ref] = float(group[group_name].attrs["frobenius_max"])
            # ok (0) and fallback (5, auto's exact gradient) are successes
            solved = run["status"][0] + (run["status"][5] if len(run["status"]) > 5 else 0)
            run["not_ok"] = 1.0 - solved / max(1, run["batch"])
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
    if len({r["forward"] for r in runs}) > 1:
        for logits in facets(runs)[0]:
            written.append(plot_forwards(runs, logits, study, made,
                                         f"{stem}_forwards_{logits_slug(logits)}.png", args.dpi))
    if len({r["eps"] for r in runs if r["convention"] == "tilekernels"}) > 1:
        written.append(plot_eps_floor(runs, study, made, f"{stem}_eps_floor.png", args.dpi))
    try:
        for path in written:
            print(path)
    except BrokenPipeError:  # e.g. piped into head
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
