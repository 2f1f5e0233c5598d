#!/usr/bin/env python3
"""Checks a sinkgrad study log against the schema in docs/experiments.md, with h5py.

    python3 tests/experiments/check_log_schema.py LOG.h5

Exits 0 and prints a summary line when the log conforms; exits 1 naming the first mismatch.
"""

import sys

import h5py
import numpy as np

ROOT_ATTRS = ["schema", "schema_version", "tool_version", "definition", "study", "overrides",
              "definition_path", "study_name", "started", "host", "devices"]
RUN_ATTRS = ["key", "input", "n", "batch", "logits_source", "seed", "T", "precision", "solver",
             "options", "device", "forward", "eps", "started", "wall_seconds",
             "forward_violation_max",
             "forward_violation_median", "converged_T", "row_violation_max",
             "row_violation_median", "column_violation_max", "column_violation_median",
             "final_residual_max", "final_residual_median", "saturated_matrices",
             "solve_seconds", "solve_seconds_min",
             "timing_repeats", "timing_method", "iterations_mean", "iterations_max",
             "status_counts", "status_names", "complete"]
METRIC_ATTRS = ["mean_abs", "max_abs", "mean_rel", "max_rel", "frobenius_median",
                "frobenius_p95", "frobenius_max", "measured"]
CONVERGENCE = ["residual_median", "residual_max", "relative_residual_median",
               "relative_residual_max"]
ITERATES = ["iterate_error_vs_unrolled_median", "iterate_error_vs_converged_median"]


def fail(message):
    print(f"check_log_schema: {message}")
    sys.exit(1)


def require(condition, message):
    if not condition:
        fail(message)


def described_kind(name):
    """The /descriptions group that describes the attributes of the object at name."""
    parts = name.strip("/").split("/")
    if parts == [""]:
        return "root"
    if parts[0] == "inputs" and len(parts) == 2:
        return "inputs"
    if parts[0] == "references" and len(parts) == 4:
        return "references_converged" if parts[3] == "converged" else "references_T"
    if parts[0] == "runs" and len(parts) == 2:
        return "runs"
    if parts[0] == "runs" and len(parts) == 3 and parts[2].startswith("error_vs_"):
        return "runs_errors"
    return None


def check_descriptions(log):
    """Every attribute has a description and a unit under /descriptions; every dataset carries
    the attributes description and unit."""
    require("descriptions" in log, "group /descriptions missing")
    checked = [0]

    def visit(name, obj):
        if name.startswith("descriptions"):
            return
        if isinstance(obj, h5py.Dataset):
            for attr in ("description", "unit"):
                require(attr in obj.attrs, f"dataset /{name} lacks attribute {attr}")
            require(len(obj.attrs["description"]) > 0, f"dataset /{name}: empty description")
            checked[0] += 1
            return
        kind = described_kind(name)
        if kind is None:
            require(len(obj.attrs) == 0, f"group /{name} has undescribed attributes")
            return
        table = log["descriptions"][kind].attrs
        for attr in obj.attrs:
            entry = "option.*" if attr.startswith("option.") else attr
            require(entry in table and entry + ".unit" in table,
                    f"attribute {attr} of /{name} is not described in /descriptions/{kind}")
            checked[0] += 1

    visit("", log)
    log.visititems(visit)
    require(checked[0] > 0, "nothing was checked for descriptions")


def main(path):
    with h5py.File(path, "r") as log:
        for name in ROOT_ATTRS:
            require(name in log.attrs, f"root attribute {name} missing")
        require(log.attrs["schema"] == "sinkgrad-study-log", "wrong schema")
        require(int(log.attrs["schema_version"]) == 3, "wrong schema_version")
        for group in ("inputs", "references", "runs"):
            require(group in log, f"group /{group} missing")
        for name, group in log["inputs"].items():
            for attr in ("key", "n", "batch", "logits_source", "seed", "complete"):
                require(attr in group.attrs, f"/inputs/{name} lacks attribute {attr}")
            n, batch = int(group.attrs["n"]), int(group.attrs["batch"])
            for dataset in ("logits", "grad_output"):
                require(group[dataset].shape == (batch, n, n) and group[dataset].dtype == np.float64,
                        f"/inputs/{name}/{dataset} is not ({batch}, {n}, {n}) float64")
            for precision, refs in log["references"][name].items():
                require("converged" in refs, f"/references/{name}/{precision}/converged missing")
                for attr in ("T", "violation_max", "reached", "complete"):
                    require(attr in refs["converged"].attrs, f"converged reference lacks {attr}")
                for ref_name, ref in refs.items():
                    require(ref["grad"].shape == (batch, n, n), f"{ref.name}/grad has wrong shape")
        runs = log["runs"]
        require(len(runs) > 0, "no runs")
        keys = set()
        for name, run in runs.items():
            for attr in RUN_ATTRS:
                require(attr in run.attrs, f"{run.name} lacks attribute {attr}")
            require(int(run.attrs["complete"]) == 1, f"{run.name} is not complete")
            key = run.attrs["key"]
            require(key not in keys, f"run {key} appears twice")
            keys.add(key)
            require(run.attrs["input"] in log["inputs"], f"{run.name}: unknown input")
            batch = int(run.attrs["batch"])
            require(int(np.sum(run.attrs["status_counts"])) == batch, f"{run.name}: status counts")
            require(run["iterations"].shape == (batch,), f"{run.name}/iterations shape")
            saturated = int(run.attrs["saturated_matrices"])
            require(0 <= saturated <= batch, f"{run.name}: saturated_matrices")
            for side in ("row", "column"):
                low, high = run.attrs[side + "_violation_median"], run.attrs[side + "_violation_max"]
                require(np.isnan(high) or 0 <= low <= high, f"{run.name}: {side} violations")
            cg = run.attrs["solver"].startswith("cg_")
            require(cg or np.isnan(run.attrs["final_residual_max"]),
                    f"{run.name}: final_residual_max of a solver without CG is not NaN")
            for metrics in ("error_vs_unrolled", "error_vs_converged"):
                require(metrics in run, f"{run.name}/{metrics} missing")
                for attr in METRIC_ATTRS:
                    require(attr in run[metrics].attrs, f"{run.name}/{metrics} lacks {attr}")
                require(run[metrics]["frobenius"].shape == (batch,), f"{run.name}/{metrics}/frobenius")
            if "convergence" in run:
                c = run["convergence"]
                K = int(run.attrs["iterations_max"])
                for dataset in CONVERGENCE:
                    require(c[dataset].shape == (K + 1,), f"{c.name}/{dataset} shape")
                for dataset in ITERATES:
                    if dataset in c:
                        require(c[dataset].shape == (K,), f"{c.name}/{dataset} shape")
        check_descriptions(log)
        print(f"check_log_schema: {path}: {len(runs)} runs, {len(log['inputs'])} inputs: ok")


if __name__ == "__main__":
    main(sys.argv[1])
