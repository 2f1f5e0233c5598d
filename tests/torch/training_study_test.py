"""training/training_study.py --smoke as a user runs it, its log checked: one complete run
per backward and T, finite losses, the unrolled backward's agreement with itself exactly 1 and
0, status counts for every step that add up to the step's matrices, every dataset and
attribute described; then training/plot_training.py draws every figure from it, and a few
runs of the other forward conventions are checked.

    training_study_test.py STUDY_SCRIPT PLOT_SCRIPT WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

BACKWARDS = ["unrolled", "cg_corrected", "cg_plain", "direct"]
TS = [1, 2, 3, 5, 10, 20]


def require(condition, message):
    if not condition:
        print(f"FAILED: {message}")
        sys.exit(1)


def check_log(path):
    with h5py.File(path, "r") as log:
        require(log.attrs["schema"] == "sinkgrad-training-log", "schema attribute")
        require(int(log.attrs["schema_version"]) == 1, "schema_version")
        descriptions = log["descriptions"]
        for name in log.attrs:
            require(name in descriptions["root"].attrs, f"root attribute {name} undescribed")
        runs = log["runs"]
        keys = {}
        for name, run in runs.items():
            a = run.attrs
            require(int(a["complete"]) == 1, f"{name} is not complete")
            for attr in a:
                require(attr in descriptions["runs"].attrs
                        and attr + ".unit" in descriptions["runs"].attrs,
                        f"run attribute {attr} undescribed")
            keys[(a["backward"], int(a["T"]))] = run
            require(a["forward"] == "columns_first" and int(a["seed"]) == 0,
                    f"{name}: the smoke study runs columns_first, seed 0")
            for dataset in run.values():
                require(dataset.attrs["description"] and "unit" in dataset.attrs,
                        f"{dataset.name} lacks description or unit")
            steps = run["train_loss"].shape[0]
            require(steps >= 2, f"{name}: {steps} steps")
            require(np.all(np.isfinite(run["train_loss"][:])), f"{name}: non-finite train loss")
            require(run["eval_loss"].shape[0] >= 2
                    and np.all(np.isfinite(run["eval_loss"][:])), f"{name}: eval loss")
            require(np.isfinite(a["final_eval_loss"]), f"{name}: final_eval_loss")
            status = run["status_counts"][:]
            require(status.shape == (steps, len(a["status_names"].split(","))),
                    f"{name}: status_counts shape {status.shape}")
            require(np.all(status.sum(1) == int(a["matrices_per_step"])),
                    f"{name}: status counts do not add up to the matrices of every step")
            require(np.array_equal(a["status_counts"], status.sum(0)),
                    f"{name}: run status_counts is not the sum over steps")
            require(a["status_names"] == "ok,not_converged,breakdown,invalid_input,"
                    "ill_conditioned,fallback", f"{name}: status_names")
            measured = run["measured_step"].shape[0]
            require(measured >= 1, f"{name}: no gradient measured")
            for dataset in ("grad_cosine", "grad_rel_error", "backward_peak_bytes"):
                require(run[dataset].shape == (measured,), f"{name}/{dataset} shape")
            require(np.all(np.isfinite(run["grad_cosine"][:])), f"{name}: cosine not finite")
            require(np.all(run["backward_peak_bytes"][:] > 0), f"{name}: no backward memory")
            require(np.all(run["step_seconds"][:] > 0), f"{name}: step times")
            if a["backward"] == "unrolled":
                require(np.all(run["grad_cosine"][:] == 1.0)
                        and np.all(run["grad_rel_error"][:] == 0.0),
                        f"{name}: unrolled does not agree exactly with itself")
            else:
                # The implicit gradients are close to the unrolled one but not equal to it.
                require(np.all(run["grad_cosine"][:] > 0.5), f"{name}: cosine {run['grad_cosine'][:]}")
        expected = {(b, T) for b in BACKWARDS for T in TS}
        require(set(keys) == expected and len(runs) == len(expected),
                f"runs {sorted(keys)} are not one per backward and T")
        # T = 20 on this model's identity-dominant logits: every backward near-exact.
        for backward in BACKWARDS:
            require(np.all(keys[(backward, 20)]["grad_rel_error"][:] < 1e-2),
                    f"{backward} at T = 20 is far from unrolled")
    print(f"training_study_test: {path}: {len(expected)} runs: ok")


def main(study, plot, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "smoke.h5")
    subprocess.run([sys.executable, study, "--smoke", "--output", log], check=True)
    check_log(log)
    written = subprocess.run([sys.executable, plot, log, "--out-dir", os.path.join(work, "plots")],
                             check=True, capture_output=True, text=True).stdout.split()
    for kind in ("loss_curves", "final_eval_loss", "gradient_agreement", "time_memory"):
        require(any(kind in path for path in written), f"plot_training.py drew no {kind} figure")
    for path in written:
        require(os.path.getsize(path) > 0, f"{path} is empty")
    print(f"training_study_test: plot_training.py wrote {len(written)} figures")
    # --table: one row per backward and T, unrolled minus itself exactly 0
    text = subprocess.run([sys.executable, plot, log, "--table"], check=True,
                          capture_output=True, text=True).stdout
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in text.splitlines()[2:]]
    require({(r[1], int(r[2])) for r in rows} == {(b, T) for b in BACKWARDS for T in TS}
            and len(rows) == len(BACKWARDS) * len(TS), f"--table rows: {text}")
    for r in rows:
        require(r[0] == "columns_first", f"--table row {r}")
        if r[1] == "unrolled":
            require(r[4] == "yes" and r[5] == "+0.0000 [+0.0000, +0.0000]"
                    and float(r[6]) == 0.0, f"unrolled against itself: {r}")
    print(f"training_study_test: plot_training.py --table gave {len(rows)} rows")

    # The other forward conventions reach the layer: tilekernels with its eps, and unrolled
    # still agrees exactly with itself.
    log = os.path.join(work, "conventions.h5")
    subprocess.run([sys.executable, study, "--smoke", "--forwards", "rows_first,tilekernels",
                    "--T", "2", "--backwards", "unrolled,cg_corrected", "--quiet", "--output",
                    log], check=True)
    with h5py.File(log, "r") as f:
        runs = {(r.attrs["forward"], r.attrs["backward"]): r for r in f["runs"].values()}
        require(len(runs) == 4, f"{len(runs)} convention runs, expected 4")
        require(runs[("tilekernels", "unrolled")].attrs["eps"] == 1e-6
                and runs[("rows_first", "unrolled")].attrs["eps"] == 0.0, "eps of the runs")
        for (forward, backward), run in runs.items():
            require(np.all(np.isfinite(run["eval_loss"][:])), f"{forward} {backward}: loss")
            if backward == "unrolled":
                require(np.all(run["grad_rel_error"][:] == 0.0), f"{forward}: unrolled != itself")
            else:
                require(np.all(run["grad_rel_error"][:] > 0.0), f"{forward}: {backward} is exact")
    print("training_study_test: rows_first and tilekernels: ok")

    # mHC's streams that start as exact copies (dL/dR constant along the exact side: the true
    # gradient is zero), with failures left visible: every backward solves every matrix.
    log = os.path.join(work, "copies.h5")
    subprocess.run([sys.executable, study, "--smoke", "--no-stream-offsets", "--on-failure",
                    "keep", "--backwards", "unrolled,auto,cg_corrected,cg_plain,direct", "--quiet",
                    "--output", log], check=True)
    with h5py.File(log, "r") as f:
        runs = list(f["runs"].values())
        require(len(runs) == 5 * len(TS), f"{len(runs)} copied-stream runs")
        for run in runs:
            a = run.attrs
            where = f"copied streams, {a['backward']} T = {int(a['T'])}"
            counts = dict(zip(a["status_names"].split(","), a["status_counts"]))
            require(int(a["skipped_steps"]) == 0,
                    f"{where}: {int(a['skipped_steps'])} skipped, status counts {counts}")
            # The corrected backwards solve every matrix; the plain one may stop short of its
            # tolerance where the forward has not converged (its system is then indefinite),
            # with a finite gradient.
            if a["backward"] != "cg_plain":
                require(counts["ok"] + counts["fallback"] == int(a["matrices_per_step"]) *
                        run["train_loss"].shape[0], f"{where}: status counts {counts}")
            require(np.all(np.isfinite(run["eval_loss"][:])), f"{where}: loss")
    print("training_study_test: streams that start as copies: ok")


if __name__ == "__main__":
    main(*sys.argv[1:4])
