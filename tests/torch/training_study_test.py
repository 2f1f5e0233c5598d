"""training/training_study.py --smoke as a user runs it, its log checked: one complete run
per backward and T, finite losses, the unrolled backward's agreement with itself exactly 1 and
0, status counts for every step that add up to the step's matrices (none for stop_gradient),
the measured-step numbers (share through the Sinkhorn, the logits' invariant gradient: zero for
unrolled), every dataset and attribute described; then training/plot_training.py draws every
figure from it and from two logs at once, and a rows_first and a bf16 autocast run are checked.
The corpus is a sample that training/make_corpus.py makes from a few manual pages (from GPL-3
where the machine has none).

    training_study_test.py STUDY_SCRIPT PLOT_SCRIPT WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

BACKWARDS = ["unrolled", "cg_corrected", "cg_plain", "cg_plain_projected", "direct", "auto",
             "stop_gradient"]
TS = [1, 3]


def require(condition, message):
    if not condition:
        print(f"FAILED: {message}")
        sys.exit(1)


def check_log(path):
    with h5py.File(path, "r") as log:
        require(log.attrs["schema"] == "sinkgrad-training-log", "schema attribute")
        require(int(log.attrs["schema_version"]) == 2, "schema_version")
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
            require(a["forward"] == "tilekernels" and int(a["seed"]) == 0,
                    f"{name}: the smoke study runs tilekernels, seed 0")
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
            solved = 0 if a["backward"] == "stop_gradient" else int(a["matrices_per_step"])
            require(np.all(status.sum(1) == solved),
                    f"{name}: status counts do not add up to the matrices of every step")
            require(np.array_equal(a["status_counts"], status.sum(0)),
                    f"{name}: run status_counts is not the sum over steps")
            require(a["status_names"] == "ok,not_converged,breakdown,invalid_input,"
                    "ill_conditioned,fallback", f"{name}: status_names")
            measured = run["measured_step"].shape[0]
            require(measured >= 1, f"{name}: no gradient measured")
            for dataset in ("grad_cosine", "grad_rel_error", "backward_peak_bytes",
                            "sinkhorn_share", "logits_grad_norm", "logits_grad_invariant_norm",
                            "logit_spread", "logit_drift", "backward_seconds"):
                require(run[dataset].shape == (measured,), f"{name}/{dataset} shape")
            require(np.all(run["logit_spread"][:] > 0), f"{name}: logit spread")
            require(int(a["diverged"]) == 0 and np.isfinite(a["late_eval_loss"]),
                    f"{name}: diverged or no late eval loss")
            require(np.all(np.isfinite(run["grad_cosine"][:])), f"{name}: cosine not finite")
            require(np.all(run["backward_peak_bytes"][:] > 0), f"{name}: no backward memory")
            require(np.all(run["step_seconds"][:] > 0), f"{name}: step times")
            invariant = run["logits_grad_invariant_norm"][:]
            if a["backward"] == "unrolled":
                require(np.all(run["grad_cosine"][:] == 1.0)
                        and np.all(run["grad_rel_error"][:] == 0.0),
                        f"{name}: unrolled does not agree exactly with itself")
                require(np.all(invariant <= 1e-5 * run["logits_grad_norm"][:] + 1e-30),
                        f"{name}: the exact gradient has an invariant part {invariant}")
            elif a["backward"] == "stop_gradient":
                require(np.array_equal(run["grad_rel_error"][:], run["sinkhorn_share"][:]),
                        f"{name}: stop_gradient's error against unrolled is not the share")
                require(np.all(run["logits_grad_norm"][:] == 0), f"{name}: a logits gradient")
            elif not a["backward"].startswith("cg_plain"):
                # The corrected gradients are close to the unrolled one but not equal to it;
                # the plain ones may be far off at T = 1 (a spike of the plain system).
                require(np.all(run["grad_cosine"][:] > 0.5),
                        f"{name}: cosine {run['grad_cosine'][:]}")
        expected = {(b, T) for b in BACKWARDS for T in TS}
        require(set(keys) == expected and len(runs) == len(expected),
                f"runs {sorted(keys)} are not one per backward and T")
        # cg_plain_projected: the observer sees the layer's own gradient, before the projection,
        # and the plain gradient has an invariant part.
        for T in TS:
            projected = keys[("cg_plain_projected", T)]
            require(np.all(projected["logits_grad_invariant_norm"][1:] > 0),
                    "cg_plain_projected: the layer's own gradient is observed, not the result")
    print(f"training_study_test: {path}: {len(expected)} runs: ok")


def make_corpus(study, work):
    corpus = os.path.join(work, "corpus")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(study), "make_corpus.py"),
                    "--out", corpus, "--megabytes", "0.06", "--held-out", "4"], check=True,
                   capture_output=True)
    return corpus


def main(study, plot, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    corpus = make_corpus(study, work)
    log = os.path.join(work, "smoke.h5")
    subprocess.run([sys.executable, study, "--smoke", "--corpus", corpus, "--output", log],
                   check=True)
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
            for line in text.splitlines()[2:] if line.startswith("|")]
    require({(r[1], int(r[2])) for r in rows} == {(b, T) for b in BACKWARDS for T in TS}
            and len(rows) == len(BACKWARDS) * len(TS), f"--table rows: {text}")
    for r in rows:
        require(r[0] == "tilekernels", f"--table row {r}")
        if r[1] == "unrolled":
            require(r[4] == "yes" and r[5] == "+0.0000 [+0.0000, +0.0000]"
                    and float(r[6]) == 0.0, f"unrolled against itself: {r}")
    print(f"training_study_test: plot_training.py --table gave {len(rows)} rows")

    # Another convention into a second log of the same study (as a shard writes it): the
    # table reads both logs as one.
    other = os.path.join(work, "rows_first.h5")
    subprocess.run([sys.executable, study, "--smoke", "--corpus", corpus, "--forwards",
                    "rows_first", "--T", "3", "--backwards", "unrolled,cg_corrected", "--quiet",
                    "--output", other], check=True)
    text = subprocess.run([sys.executable, plot, log, other, "--table"], check=True,
                          capture_output=True, text=True).stdout
    require(sum(line.startswith("| rows_first") for line in text.splitlines()) == 2,
            f"--table of two logs: {text}")
    print("training_study_test: rows_first in a second log, the two read together: ok")

    # The bf16 arm (another study: its own log).
    arm = os.path.join(work, "bf16.h5")
    subprocess.run([sys.executable, study, "--smoke", "--corpus", corpus, "--T", "3",
                    "--backwards", "unrolled,cg_corrected", "--autocast", "bf16", "--quiet",
                    "--output", arm], check=True)
    with h5py.File(arm, "r") as f:
        runs = {r.attrs["backward"]: r for r in f["runs"].values()}
        require(len(runs) == 2 and "autocast=bf16" in f.attrs["study"].splitlines(),
                "the bf16 arm's log")
        for backward, run in runs.items():
            require(np.all(np.isfinite(run["eval_loss"][:])), f"bf16 {backward}: loss")
    print("training_study_test: the bf16 autocast arm: ok")


if __name__ == "__main__":
    main(*sys.argv[1:4])
