#!/usr/bin/env python3
"""Each forward convention's time over the default's, from sinkgrad_bench_cuda logs of one build.

    gpu_bench_conventions.py RUN_1.log [RUN_2.log ...]

For the forward and `unrolled` kernels of the logs (their Markdown tables): the default's
median time over the runs, then for each convention in the logs (`kernel[convention:eps]`) the
median of its time over the median of the default's, per n and dtype, as one Markdown table
(#16's target: every convention within 10% of the default). Standard library only."""
import re
import statistics
import sys

from gpu_bench_compare import table  # the bench log's table, one parser for both scripts

NAME = re.compile(r"^(forward|unrolled)(\[[^]]+\])?/n(\d+)/(f\d+)$")


def main(paths):
    if not paths:
        sys.exit(__doc__)
    times = {}  # (kernel, convention, n, dtype) -> [ms per run]
    for path in paths:
        for name, ms in table(path).items():
            match = NAME.match(name)
            if match:
                kernel, convention, n, dtype = match.groups()
                times.setdefault((kernel, convention or "", int(n), dtype), []).append(ms)
    if not times:
        sys.exit("no forward or unrolled rows found")
    columns = sorted({(n, dtype) for _, _, n, dtype in times})
    print("| kernel | " + " | ".join(f"n{n} {dtype}" for n, dtype in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for kernel in ("forward", "unrolled"):
        default = {c: statistics.median(times[(kernel, "", *c)])
                   for c in columns if (kernel, "", *c) in times}
        if not default:
            continue
        print(f"| {kernel} (ms) | " +
              " | ".join(f"{default[c]:.3f}" if c in default else "" for c in columns) + " |")
        conventions = sorted({conv for k, conv, _, _ in times if k == kernel and conv})
        for convention in conventions:
            cells = []
            for c in columns:
                runs = times.get((kernel, convention, *c))
                cells.append(f"{statistics.median(runs) / default[c]:.3f}"
                             if runs and c in default else "")
            print(f"| {kernel} {convention} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
