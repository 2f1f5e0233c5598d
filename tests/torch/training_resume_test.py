"""training/training_study.py interrupted and resumed, as a user does it: a tiny sweep is
killed (SIGKILL) after two runs, resumed and stopped by SIGINT after its first new run (it
finishes that run and exits 130), then resumed to the end, then extended by a wider T list (a
narrower one is refused).
Every run must be in the log once, and a run written before an interruption must not have been
recomputed (its process attribute and wall time are those of the process that first wrote
it), and every run's numbers are bit for bit those of a clean sweep run in one go. Two shards
(--shard 0/2, 1/2) into two logs together hold the clean sweep's runs, with the same numbers,
and --done-logs with one shard's log runs exactly the other's; training/merge_logs.py makes
one log of the shards with the same numbers and refuses a log of another study;
--budget-minutes 0 stops after one run with exit 3. A log without --resume and a resume with
other settings are refused. The corpus is a sample of training/make_corpus.py.

    training_resume_test.py STUDY_SCRIPT WORK_DIR
"""
import os
import shutil
import signal
import subprocess
import sys

import h5py

import numpy as np

RUNS = 6
CORPUS = []  # the sample corpus' directory, made once by main()
# What a run computed (not when or where): compared between a resumed and a clean sweep.
COMPUTED = ("train_loss", "eval_loss", "status_counts", "skipped", "grad_rel_error",
            "sinkhorn_share", "logit_spread")


def sweep(steps=3, quiet=True, Ts="1,2,3"):
    """The tiny sweep's arguments: RUNS runs of a few steps each."""
    return (["--smoke", "--corpus", CORPUS[0], "--backwards", "unrolled,cg_corrected", "--T",
             Ts, "--steps", str(steps)] + (["--quiet"] if quiet else []))


def numbers(*logs):
    """{key: {dataset: array}} of the complete runs of the logs."""
    found = {}
    for log in logs:
        with h5py.File(log, "r") as f:
            for r in f["runs"].values():
                if int(r.attrs.get("complete", 0)) == 1:
                    found[r.attrs["key"]] = {k: r[k][()] for k in COMPUTED}
    return found


def same_numbers(a, b):
    return a.keys() == b.keys() and all(
        np.array_equal(a[k][d], b[k][d], equal_nan=True) for k in a for d in COMPUTED)


def require(condition, message):
    if not condition:
        print(f"FAILED: {message}")
        sys.exit(1)


def runs(log):
    """{key: (process, wall_seconds)} of the complete runs."""
    with h5py.File(log, "r") as f:
        return {r.attrs["key"]: (r.attrs["process"], float(r.attrs["wall_seconds"]))
                for r in f["runs"].values() if int(r.attrs.get("complete", 0)) == 1}


def interrupted(study, log, extra, after, sig):
    """Starts the sweep, sends sig once `after` runs are reported written; returns the exit
    code. Progress lines are read from a pipe (not --quiet for this)."""
    command = [sys.executable, study, *sweep(quiet=False), "--output", log, *extra]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    written = 0
    for line in process.stderr:
        if "] backward=" in line:
            written += 1
            if written == after:
                process.send_signal(sig)
                break
    process.stderr.read()
    return process.wait(timeout=120)


def main(study, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "resume.h5")
    CORPUS.append(os.path.join(work, "corpus"))
    subprocess.run([sys.executable, os.path.join(os.path.dirname(study), "make_corpus.py"),
                    "--out", CORPUS[0], "--megabytes", "0.03", "--held-out", "4"], check=True,
                   capture_output=True)
    clean = os.path.join(work, "clean.h5")
    subprocess.run([sys.executable, study, *sweep(), "--output", clean], check=True)

    code = interrupted(study, log, [], 2, signal.SIGKILL)
    require(code == -signal.SIGKILL, f"the first sweep was not killed (exit {code})")
    first = runs(log)
    require(len(first) == 2, f"{len(first)} complete runs after the kill, expected 2")

    refused = subprocess.run([sys.executable, study, *sweep(), "--output", log],
                             capture_output=True, text=True)
    require(refused.returncode == 1 and "--resume" in refused.stderr,
            f"an existing log without --resume: exit {refused.returncode}, {refused.stderr!r}")
    other = subprocess.run([sys.executable, study, *sweep(steps=4), "--output", log,
                            "--resume"], capture_output=True, text=True)
    require(other.returncode == 1 and "different study" in other.stderr
            and "steps" in other.stderr,
            f"a resume with other settings: exit {other.returncode}, {other.stderr!r}")
    require(runs(log) == first, "a refused command changed the log")

    code = interrupted(study, log, ["--resume"], 1, signal.SIGINT)
    require(code == 130, f"SIGINT: exit {code}, expected 130")
    second = runs(log)
    require(len(second) in (3, 4), f"{len(second)} complete runs after SIGINT, expected 3 or 4")
    require(all(second[key] == value for key, value in first.items()),
            "runs written before the kill were recomputed or lost")

    done = subprocess.run([sys.executable, study, *sweep(), "--output", log, "--resume"],
                          capture_output=True, text=True)
    require(done.returncode == 0, f"the last resume failed: {done.stderr}")
    final = runs(log)
    require(len(final) == RUNS, f"{len(final)} runs at the end, expected {RUNS}")
    require(all(final[key] == value for key, value in second.items()),
            "runs written before SIGINT were recomputed or lost")
    processes = {process for process, _ in final.values()}
    require(len(processes) == 3, f"the runs came from {len(processes)} processes, expected 3")
    with h5py.File(log, "r") as f:
        require(len(f["runs"]) == RUNS, "the log holds incomplete or duplicate runs")
    require(same_numbers(numbers(log), numbers(clean)),
            "the interrupted and resumed sweep differs from the clean one")

    shards = [os.path.join(work, f"shard{i}.h5") for i in range(2)]
    for i, shard in enumerate(shards):
        subprocess.run([sys.executable, study, *sweep(), "--shard", f"{i}/2", "--output",
                        shard], check=True)
    parts = [numbers(shard) for shard in shards]
    require(not parts[0].keys() & parts[1].keys() and all(parts),
            "the shards overlap or one is empty")
    require(same_numbers(numbers(*shards), numbers(clean)), "the shards differ from the clean")
    merged = os.path.join(work, "merged.h5")  # training/merge_logs.py: one compressed log
    merge = os.path.join(os.path.dirname(study), "merge_logs.py")
    subprocess.run([sys.executable, merge, merged, *shards, shards[0]], check=True,
                   capture_output=True)
    require(same_numbers(numbers(merged), numbers(clean)), "the merged log differs from the "
            "clean one")
    other = os.path.join(work, "other.h5")  # another study (fewer steps): refused, no output
    subprocess.run([sys.executable, study, *sweep(steps=2), "--backwards", "unrolled", "--T",
                    "1", "--output", other], check=True)
    refused = subprocess.run([sys.executable, merge, os.path.join(work, "refused.h5"),
                              shards[0], other], capture_output=True, text=True)
    require(refused.returncode != 0 and "another study" in refused.stderr and
            not os.path.exists(os.path.join(work, "refused.h5")),
            f"merging another study: exit {refused.returncode}, {refused.stderr!r}")
    rest = os.path.join(work, "rest.h5")  # what shard 0 left, found through --done-logs
    subprocess.run([sys.executable, study, *sweep(), "--done-logs",
                    os.path.join(work, "shard*.h5"), "--output", rest], check=True)
    require(not os.path.exists(rest) or not runs(rest), "--done-logs: runs done elsewhere ran")
    subprocess.run([sys.executable, study, *sweep(), "--done-logs", shards[0], "--output", rest,
                    "--resume"], check=True)
    require(numbers(rest).keys() == parts[1].keys(), "--done-logs: not the other shard's runs")
    budget = subprocess.run([sys.executable, study, *sweep(), "--budget-minutes", "0",
                             "--output", os.path.join(work, "budget.h5")],
                            capture_output=True, text=True)
    require(budget.returncode == 3 and len(runs(os.path.join(work, "budget.h5"))) == 1,
            f"--budget-minutes 0: exit {budget.returncode}, {budget.stderr!r}")

    # A narrowed T list is refused; a widened one adds its runs only and becomes the sweep.
    narrowed = subprocess.run([sys.executable, study, *sweep(Ts="3,5"), "--output", log,
                               "--resume"], capture_output=True, text=True)
    require(narrowed.returncode == 1 and "narrowed: 1,2 missing" in narrowed.stderr,
            f"a narrowed sweep: exit {narrowed.returncode}, {narrowed.stderr!r}")
    more = subprocess.run([sys.executable, study, *sweep(Ts="1,2,3,5"), "--output", log,
                           "--resume"], capture_output=True, text=True)
    require(more.returncode == 0, f"extending the sweep failed: {more.stderr}")
    extended = runs(log)
    require(len(extended) == RUNS + 2 and all(extended[k] == v for k, v in final.items()),
            f"extending the sweep: {len(extended)} runs, or earlier runs recomputed")
    with h5py.File(log, "r") as f:
        require("T=1,2,3,5" in f.attrs["sweep"].splitlines(), f"sweep {f.attrs['sweep']!r}")
        require(len(f.attrs["resumed"].splitlines()) == 3, "resumed lists 3 commands")
    print(f"training_resume_test: {RUNS} runs from 3 processes, none recomputed, equal to a clean "
          "sweep and to two shards; 2 added; the budget stops after one run: ok")


if __name__ == "__main__":
    main(*sys.argv[1:3])
