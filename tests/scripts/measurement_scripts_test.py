#!/usr/bin/env python3
"""scripts/gpu_bench_compare.py, gpu_bench_conventions.py, gpu_unrolled_ab_summary.py,
ncu_source_summary.py, gpu_bench_rounds.sh (on packs of stand-in benches) and the tests and
memcheck steps of gpu_performance.sh (on a stand-in suite and compute-sanitizer), spawned as a
user runs them, on small logs and an ncu source page whose answers are worked out by hand."""
import os
import subprocess
import sys
import tempfile

SCRIPTS = sys.argv[1]


def run(script, *args):
    done = subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{script} {args}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def cells(output, first):
    """The cells of the Markdown row whose first cell is `first`."""
    for line in output.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts and parts[0] == first:
            return parts[1:]
    sys.exit(f"no row {first!r} in:\n{output}")


def check(condition, message):
    if not condition:
        sys.exit("FAILED: " + message)


def bench_log(path, rows, floor):
    """The bench's table; `floor`: with the of floor and arith / mem columns newer benches add."""
    with open(path, "w", encoding="utf-8") as log:
        log.write("device: test\n| kernel / n / dtype | ms (median) | GB/s | of copy |"
                  + (" of floor | arith / mem |\n|---|---|---|---|---|---|\n" if floor
                     else "\n|---|---|---|---|\n"))
        for name, ms in rows.items():
            log.write(f"| {name} | {ms:.3f} | 1 | 0.1 |" + (" 0.5 | 1.20 |\n" if floor else "\n"))


def main():
    tmp = tempfile.mkdtemp()
    # Three runs; medians: default forward n4 f32 2.0, eps 2.4 (ratio 1.200); n4 f64 4.0
    # and 3.0 (0.750); unrolled n8 f32 10.0, tilekernels 11.5 (1.150).
    runs = [
        {"forward/n4/f32": 1.0, "forward[columns_first:1e-06]/n4/f32": 2.2,
         "forward/n4/f64": 4.0, "forward[columns_first:1e-06]/n4/f64": 3.0,
         "unrolled/n8/f32": 9.0, "unrolled[tilekernels:1e-06]/n8/f32": 11.5},
        {"forward/n4/f32": 2.0, "forward[columns_first:1e-06]/n4/f32": 2.6,
         "forward/n4/f64": 5.0, "forward[columns_first:1e-06]/n4/f64": 2.0,
         "unrolled/n8/f32": 10.0, "unrolled[tilekernels:1e-06]/n8/f32": 11.0},
        {"forward/n4/f32": 3.0, "forward[columns_first:1e-06]/n4/f32": 2.4,
         "forward/n4/f64": 3.0, "forward[columns_first:1e-06]/n4/f64": 3.5,
         "unrolled/n8/f32": 12.0, "unrolled[tilekernels:1e-06]/n8/f32": 12.0},
    ]
    logs = []
    for i, rows in enumerate(runs):
        logs.append(os.path.join(tmp, f"run{i}.log"))
        bench_log(logs[-1], rows, floor=i == 1)  # logs of both table forms side by side
    out = run("gpu_bench_conventions.py", *logs)
    header = cells(out, "kernel")
    check(header == ["n4 f32", "n4 f64", "n8 f32"], f"columns {header}")
    check(cells(out, "forward (ms)")[:2] == ["2.000", "4.000"], out)
    check(cells(out, "forward [columns_first:1e-06]")[:2] == ["1.200", "0.750"], out)
    check(cells(out, "unrolled (ms)")[2] == "10.000", out)
    check(cells(out, "unrolled [tilekernels:1e-06]")[2] == "1.150", out)

    # Base runs 0 and 2 against new run 1: medians 2.0 and 2.0 at n4 f32 (base 1.0, 3.0 ->
    # 2.0), so 1.000, the base's spread 3.0 / 1.0 - 1 = 200%; n4 f64 base 3.5, new 5.0: 1.429.
    # Round ratios, n4 f32: 2.0 / 1.0 and 2.0 / 3.0, quartiles (inclusive) 2/3 + 1/4 (4/3) = 1,
    # 4/3 and 5/3, new slower in round 1; n4 f64: 5.0 / 4.0 and 5.0 / 3.0, median 35/24.
    out = run("gpu_bench_compare.py", logs[0], logs[1], logs[2], logs[1])
    check(cells(out, "forward/n4/f32") == ["2.000", "2.000", "1.000", "200.0%",
                                           "1.000 / 1.333 / 1.667", "1 of 2"], out)
    check(cells(out, "forward/n4/f64")[:4] == ["3.500", "5.000", "1.429", "33.3%"], out)
    check(cells(out, "forward/n4/f64")[4].split(" / ")[1] == "1.458", out)
    check(cells(out, "forward/n4/f64")[5] == "2 of 2", out)
    # One round: no round columns.
    out = run("gpu_bench_compare.py", logs[0], logs[1])
    check(cells(out, "forward/n4/f32") == ["1.000", "2.000", "2.000", "0.0%"], out)

    # An ncu source page: a prologue of 2 instructions run once per warp (10 warps), a loop of
    # 3 run 40 times, an epilogue of 1. Instructions: 20 + 120 + 10 = 150; the loop 80.0%.
    # Samples: 5 + 5 outside, 60 + 20 + 10 in the loop: 90.0% of 100.
    base = 0x7f0000000000
    page = [("LDC R1, c[0x0][0x28]", 10, 5, "stall_wait"),
            ("MOV R2, RZ", 10, 0, ""),
            ("LDS R3, [R2]", 40, 60, "stall_short_sb"),
            ("FFMA R4, R3, R3, R4", 40, 20, "stall_wait"),
            (f"@P0 BRA 0x{base + 0x20:x}", 40, 10, "stall_branch_resolving"),
            ("EXIT", 10, 5, "stall_wait")]
    csv_path = os.path.join(tmp, "page.csv")
    stalls = ["stall_wait", "stall_short_sb", "stall_branch_resolving"]
    with open(csv_path, "w", encoding="utf-8") as f:
        f.write('"Kernel Name","team_kernel"\n')
        f.write(",".join(f'"{c}"' for c in ["Address", "Source",
                "Warp Stall Sampling (All Samples)", "Instructions Executed", *stalls,
                *(s + " (Not Issued)" for s in stalls)]) + "\n")
        for i, (source, executed, samples, stall) in enumerate(page):
            per_stall = [str(samples if s == stall else 0) for s in stalls]
            row = [f"0x{base + 0x10 * i:x}", "      " + source, str(samples), str(executed),
                   *per_stall, *["0"] * len(stalls)]
            f.write(",".join(f'"{c}"' for c in row) + "\n")
    out = run("ncu_source_summary.py", csv_path, "--top", "1")
    check("150 warp-instructions, 100 stall samples" in out, out)
    loop = [line for line in out.splitlines() if line.startswith("loop of 3 instructions, 40 runs")]
    check(len(loop) == 1 and "80.0% of instructions" in loop[0] and "90.0% of samples (90)" in loop[0],
          out)
    check("60  stall_short_sb" in out, out)
    outside = [line for line in out.splitlines() if line.startswith("outside the loops")]
    check(len(outside) == 1 and "20.0% of instructions" in outside[0] and "(10)" in outside[0], out)

    # gpu_unrolled_ab_summary.py: two rounds of each side; base ms 1.0 and 1.1 (median 1.05),
    # new 0.9 twice; the eps kernel's bits differ between the trees, a cut run is skipped.
    ab = tempfile.mkdtemp()
    default, tk, eps = ("unrolled/n8/f32", "unrolled[tilekernels:1e-06]/n8/f32",
                        "unrolled[columns_first:1e-06]/n8/f32")
    runs = {"base_1": [(default, 2.0, "a"), (tk, 1.0, "b"), (eps, 2.2, "c")],
            "base_2": [(default, 2.0, "a"), (tk, 1.1, "b"), (eps, 2.2, "c")],
            "new_1": [(default, 1.0, "a"), (tk, 0.9, "b"), (eps, 2.2, "d")],
            "new_2": [(default, 1.0, "a"), (tk, 0.9, "b"), (eps, 2.2, "d")]}
    for name, rows in runs.items():
        with open(os.path.join(ab, name + ".txt"), "w", encoding="utf-8") as f:
            f.writelines(f"{k} {ms} {h}1 {h}2 ok\n" for k, ms, h in rows)
            f.write("unrolled/n16/f32 3.0")  # cut off: skipped
    out = run("gpu_unrolled_ab_summary.py", ab, "2")
    check(cells(out, tk) == ["1.0500", "0.9000", "0.857", "10.0%", "0.900", "0.525", "yes"], out)
    check(cells(out, eps)[-1] == "NO", out)
    check(cells(out, default)[2:5] == ["0.500", "0.0%", "1.000"], out)
    check("n16" not in out, out)

    # gpu_bench_rounds.sh on two packs whose "bench" prints fixed tables (base 2.0 ms, new
    # 3.0 ms; the filter passed through is checked): every round's ratio is 1.5.
    packs = os.path.join(tmp, "packs")
    for name, ms in (("base", 2.0), ("new", 3.0)):
        folder = os.path.join(tmp, "pack_src", name)
        os.makedirs(folder)
        fake = os.path.join(folder, "sinkgrad_bench_cuda")
        with open(fake, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n[ \"$1\" = \"--benchmark_filter=^cg\" ] || exit 3\nsleep 0.1\n"
                    f"echo '| cg_corrected/n8/f64 | {ms:.3f} | 1 | 0.1 |'\n")
        os.chmod(fake, 0o755)
    os.makedirs(os.path.join(packs, "lib"))
    for name in ("base", "new"):
        subprocess.run(["tar", "-cJf", os.path.join(packs, name + ".txz"), "-C",
                        os.path.join(tmp, "pack_src"), name], check=True)
    done = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_bench_rounds.sh"), "2", "^cg",
                           "base", "new"], capture_output=True, text=True, check=False,
                          env={**os.environ, "SINKGRAD_BENCH_PACKS": packs,
                               "OUT": os.path.join(tmp, "rounds")})
    check(done.returncode == 0, f"gpu_bench_rounds.sh: exit {done.returncode}\n{done.stderr}")
    row = cells(done.stdout, "cg_corrected/n8/f64")
    rounds = int(done.stdout.split(" rounds")[0].split()[-1])
    check(rounds >= 2 and row[:4] == ["2.000", "3.000", "1.500", "0.0%"], done.stdout)
    check(row[4:] == ["1.500 / 1.500 / 1.500", f"{rounds} of {rounds}"], done.stdout)
    for kept in ("new_over_base.md", "logs.tgz"):
        check(os.path.exists(os.path.join(tmp, "rounds", kept)), done.stdout)

    # A bench that fails on its third call, which is in round 3 (each bench runs once a round):
    # the 2 complete rounds are still compared, and the exit status says that a run failed.
    folder = os.path.join(tmp, "pack_src", "flaky")
    os.makedirs(folder)
    with open(os.path.join(folder, "sinkgrad_bench_cuda"), "w", encoding="utf-8") as f:
        f.write(f"#!/bin/sh\ncalls={tmp}/flaky_calls\nn=$(($(cat $calls 2>/dev/null || echo 0) + 1))"
                "\necho $n > $calls\n[ $n -lt 3 ] || exit 4\n"
                "echo '| cg_corrected/n8/f64 | 4.000 | 1 | 0.1 |'\n")
    os.chmod(os.path.join(folder, "sinkgrad_bench_cuda"), 0o755)
    subprocess.run(["tar", "-cJf", os.path.join(packs, "flaky.txz"), "-C",
                    os.path.join(tmp, "pack_src"), "flaky"], check=True)
    done = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_bench_rounds.sh"), "30", "^cg",
                           "base", "flaky"], capture_output=True, text=True, check=False,
                          env={**os.environ, "SINKGRAD_BENCH_PACKS": packs,
                               "OUT": os.path.join(tmp, "flaky_rounds")})
    check(done.returncode == 1 and "flaky failed in round 3" in done.stderr,
          f"exit {done.returncode}\n{done.stderr}")
    check(done.stdout.startswith("2 rounds"), done.stdout)
    check(cells(done.stdout, "cg_corrected/n8/f64")[2:6] ==
          ["2.000", "0.0%", "2.000 / 2.000 / 2.000", "2 of 2"], done.stdout)

    # gpu_performance.sh's tests and memcheck steps on a stand-in build whose suite has two
    # tests a shard: shard 0 passes one and skips one, shard 1 fails its second, shard 2 hangs
    # in its second (stopped after TEST_SECONDS); at the quick sizes every shard passes, and the
    # stand-in compute-sanitizer finds 2 errors in shard 1. A filter is passed on to the suite.
    build = os.path.join(tmp, "build")
    os.makedirs(os.path.join(build, "bin"))
    tools = os.path.join(tmp, "tools")
    os.makedirs(tools)
    suite = os.path.join(build, "bin", "sinkgrad_cuda_tests")
    with open(suite, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n[ $# = 0 ] || [ \"$*\" = '--gtest_filter=Shard0.*' ] || exit 7\n"
                "i=$GTEST_SHARD_INDEX\n"
                "echo '[==========] Running 2 tests from 1 test suite.'\n"
                "echo \"[ RUN      ] Shard$i.First\"\necho \"[       OK ] Shard$i.First (1 ms)\"\n"
                "echo \"[ RUN      ] Shard$i.Second\"\n"
                "case $i:${SINKGRAD_CUDA_TEST_QUICK:-0} in\n"
                "  1:0) echo '[  FAILED  ] Shard1.Second (2 ms)'; "
                "echo '[  FAILED  ] 1 test, listed below:'; echo '[  FAILED  ] Shard1.Second'; "
                "exit 1;;\n"
                "  2:0) exec sleep 20;;\n"
                "  *) echo \"[  SKIPPED ] Shard$i.Second (0 ms)\";;\nesac\n"
                "echo '[  PASSED  ] 1 test.'\n")
    with open(os.path.join(tools, "compute-sanitizer"), "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n[ \"$1 $2 $3 $4\" = '--tool memcheck --error-exitcode 3' ] || exit 8\n"
                "shift 4\n\"$@\"\ncode=$?\nerrors=0\n[ \"$GTEST_SHARD_INDEX\" = 1 ] && errors=2\n"
                "echo \"========= ERROR SUMMARY: $errors errors\"\n[ $errors = 0 ] || exit 3\n"
                "exit $code\n")
    for tool in (suite, os.path.join(tools, "compute-sanitizer")):
        os.chmod(tool, 0o755)

    def steps(which, out, **env):
        return subprocess.run(["bash", os.path.join(SCRIPTS, "gpu_performance.sh"), build, which],
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "OUT": os.path.join(tmp, out),
                                   "PATH": tools + os.pathsep + os.environ["PATH"], **env})

    done = steps("tests", "tests_out", TEST_SHARDS="3", TEST_SECONDS="2")
    lines = [l for l in done.stdout.splitlines() if l.startswith("shard ")]
    check(done.returncode == 1 and lines == [
        "shard 0 of 3: 2 run, 1 passed, 1 skipped: ok",
        "shard 1 of 3: 2 run, 1 passed, 0 skipped: FAILED (exit 1): Shard1.Second (2 ms) ",
        "shard 2 of 3: 2 run, 1 passed, 0 skipped: STOPPED after 2 s in Shard2.Second"],
          done.stdout + done.stderr)
    logs = sorted(os.listdir(os.path.join(tmp, "tests_out")))
    check(logs == ["cuda_tests.log"], logs)
    with open(os.path.join(tmp, "tests_out", "cuda_tests.log"), encoding="utf-8") as f:
        joined = f.read()
    check(joined.count("#### shard") == 3 and "Shard2.Second" in joined, joined)

    done = steps("memcheck", "memcheck_out", MEMCHECK_SHARDS="2")
    lines = [l for l in done.stdout.splitlines() if l.startswith("shard ")]
    check(done.returncode == 1 and lines == [
        "shard 0 of 2: 2 run, 1 passed, 1 skipped, 0 memory errors: ok",
        "shard 1 of 2: 2 run, 1 passed, 1 skipped, 2 memory errors: 2 MEMORY ERRORS (exit 3)"],
          done.stdout + done.stderr)
    done = steps("tests", "filtered_out", TEST_SHARDS="1", CUDA_TESTS_FILTER="Shard0.*")
    check(done.returncode == 0 and "shard 0 of 1: 2 run, 1 passed, 1 skipped: ok" in done.stdout,
          done.stdout + done.stderr)
    print("measurement scripts: ok")


if __name__ == "__main__":
    main()
