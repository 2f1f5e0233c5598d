#!/usr/bin/env python3
"""Compares the tables of two or more sinkgrad_bench_cuda logs, run alternately on one GPU.

    gpu_bench_compare.py BASE_1.log NEW_1.log [BASE_2.log NEW_2.log ...]

Logs alternate base, new, base, new (so that drift of the machine hits both alike). Prints one
Markdown row per kernel: the median over the runs of each side, their ratio (new / base) and
the spread of the base's own runs, max/min - 1, which is the noise a ratio must exceed to mean
anything. With two rounds or more, also the ratios of each round's pair (base_i, new_i): their
quartiles and how many rounds new was the slower, which tells a shift that every round shows
from a few slow runs. Standard library only."""
import re
import statistics
import sys

ROW = re.compile(r"^\| (\S+/n\d+/f\d+) \| ([0-9.]+) \|")


def table(path):
    rows = {}
    with open(path, encoding="utf-8") as log:
        for line in log:
            match = ROW.match(line)
            if match:
                rows[match.group(1)] = float(match.group(2))
    if not rows:
        sys.exit(f"{path}: no benchmark table found")
    return rows


def main(paths):
    if len(paths) < 2 or len(paths) % 2:
        sys.exit(__doc__)
    base = [table(p) for p in paths[0::2]]
    new = [table(p) for p in paths[1::2]]
    paired = len(base) > 1
    print("| kernel / n / dtype | base ms | new ms | new / base | base spread |"
          + (" round ratios q1 / median / q3 | rounds new slower |" if paired else ""))
    print("|---|---|---|---|---|" + ("---|---|" if paired else ""))
    worst = 0.0
    for name in base[0]:
        b = [t[name] for t in base if name in t]
        n = [t[name] for t in new if name in t]
        if not n:
            print(f"| {name} | {statistics.median(b):.3f} | missing | | |")
            continue
        ratio = statistics.median(n) / statistics.median(b)
        spread = max(b) / min(b) - 1
        worst = max(worst, ratio)
        row = (f"| {name} | {statistics.median(b):.3f} | {statistics.median(n):.3f} | "
               f"{ratio:.3f} | {spread:.1%} |")
        rounds = [t[name] / s[name] for s, t in zip(base, new) if name in s and name in t]
        if paired and len(rounds) > 1:
            q1, q2, q3 = statistics.quantiles(rounds, n=4, method="inclusive")
            slower = sum(r > 1 for r in rounds)
            row += f" {q1:.3f} / {q2:.3f} / {q3:.3f} | {slower} of {len(rounds)} |"
        elif paired:
            row += " | |"
        print(row)
    print(f"\nslowest ratio new / base: {worst:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
