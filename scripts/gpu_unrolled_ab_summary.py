#!/usr/bin/env python3
"""The table of scripts/gpu_unrolled_ab.sh's runs.

    gpu_unrolled_ab_summary.py OUT ROUNDS

Reads OUT/base_i.txt and OUT/new_i.txt (i = 1..ROUNDS; a missing or cut run is skipped) and
prints one Markdown row per kernel: the medians of each side, new over base, the base's spread
(max/min - 1, the noise a ratio must exceed), each side's time over its own default kernel at
the same n and precision (#16's target: every convention within 10% of the default), and
whether both trees gave the same bits (the checksums at T and at a checkpointed T).
Standard library only."""
import collections
import os
import statistics
import sys


def read(out, rounds):
    times = collections.defaultdict(list)  # (side, kernel) -> [ms]
    sums = collections.defaultdict(set)  # (side, kernel) -> {(checksum_T, checksum_T_check)}
    for side in ("base", "new"):
        for i in range(1, rounds + 1):
            path = os.path.join(out, f"{side}_{i}.txt")
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as runs:
                for line in runs:
                    fields = line.split()
                    if len(fields) == 5 and fields[4] == "ok":
                        times[(side, fields[0])].append(float(fields[1]))
                        sums[(side, fields[0])].add((fields[2], fields[3]))
    return times, sums


def main(args):
    if len(args) != 2:
        sys.exit(__doc__)
    times, sums = read(args[0], int(args[1]))
    kernels = sorted({kernel for _, kernel in times},
                     key=lambda k: (k.split("/")[2], int(k.split("/")[1][1:]), k))
    print("| kernel | base ms | new ms | new / base | base spread | new / its default "
          "| base / its default | same bits |")
    print("|---|---|---|---|---|---|---|---|")
    for kernel in kernels:
        base, new = times[("base", kernel)], times[("new", kernel)]
        if not base or not new:
            continue
        name, size = kernel.split("/", 1)
        default = name.split("[")[0] + "/" + size
        median = {side: statistics.median(times[(side, kernel)]) for side in ("base", "new")}
        own = {side: median[side] / statistics.median(times[(side, default)])
               for side in ("base", "new")}
        same = sums[("base", kernel)] == sums[("new", kernel)] and len(sums[("new", kernel)]) == 1
        print(f"| {kernel} | {median['base']:.4f} | {median['new']:.4f} | "
              f"{median['new'] / median['base']:.3f} | {max(base) / min(base) - 1:.1%} | "
              f"{own['new']:.3f} | {own['base']:.3f} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
