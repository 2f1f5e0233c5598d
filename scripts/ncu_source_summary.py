#!/usr/bin/env python3
"""Where a kernel spends its time, by loop, from Nsight Compute's per-instruction source page.

    ncu --section SourceCounters --kernel-name regex:team_kernel --launch-skip 2 \\
        --launch-count 1 -o R sinkgrad_bench_cuda --benchmark_filter=...
    ncu --import R.ncu-rep --page source --csv --print-source sass > R.csv
    ncu_source_summary.py R.csv [--top N] [--min SHARE]

Prints the kernel's executed warp-instructions and warp-stall samples in all, then for each
innermost loop (a backward branch of the SASS and its body) its length, how often it ran, its
share of the instructions and of the samples, and its most stalled instructions; then the same
for everything outside the loops. Two kernels' summaries side by side tell whether their
difference is in the loops' length, in their stalls, or outside them. Standard library only."""
import argparse
import csv
import re


def read(path):
    with open(path, encoding="utf-8") as source:
        rows = list(csv.reader(source))
    header = next(i for i, row in enumerate(rows) if row and row[0] == "Address")
    names = rows[header]
    col = {name: names.index(name) for name in
           ("Address", "Source", "Instructions Executed", "Warp Stall Sampling (All Samples)")}
    stalls = [i for i, name in enumerate(names)
              if name.startswith("stall_") and "Not Issued" not in name]
    out = []
    for row in rows[header + 1:]:
        if len(row) <= max(col.values()):
            continue
        count = lambda i: int(row[i]) if row[i].isdigit() else 0
        worst = max(stalls, key=count) if stalls else None
        out.append({
            "address": int(row[col["Address"]], 16),
            "source": row[col["Source"]].strip(),
            "executed": count(col["Instructions Executed"]),
            "samples": count(col["Warp Stall Sampling (All Samples)"]),
            "stall": names[worst] if worst is not None and count(worst) else "",
        })
    return out


def loops(code):
    """Innermost loops: (first, last) indices of backward branches' bodies, none nested."""
    index = {row["address"]: i for i, row in enumerate(code)}
    found = []
    for i, row in enumerate(code):
        match = re.search(r"\bBRA\b.*0x([0-9a-f]+)\s*$", row["source"])
        if match and row["executed"]:
            target = index.get(int(match.group(1), 16))
            if target is not None and target <= i:
                found.append((target, i))
    return [(a, b) for a, b in found
            if not any(c >= a and d <= b and (c, d) != (a, b) for c, d in found)]


def report(code, name, indices, total_instructions, total_samples, top):
    instructions = sum(code[i]["executed"] for i in indices)
    samples = sum(code[i]["samples"] for i in indices)
    print(f"{name}: {instructions / max(total_instructions, 1):6.1%} of instructions, "
          f"{samples / max(total_samples, 1):6.1%} of samples ({samples})")
    for i in sorted(indices, key=lambda i: -code[i]["samples"])[:top]:
        row = code[i]
        print(f"    {row['samples']:7d}  {row['stall']:24s} {row['source'][:60]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=3, help="most stalled instructions per part")
    parser.add_argument("--min", type=float, default=0.02,
                        help="loops below this share of instructions and of samples are summed")
    args = parser.parse_args()
    code = read(args.csv)
    total_instructions = sum(row["executed"] for row in code)
    total_samples = sum(row["samples"] for row in code)
    print(f"{args.csv}: {total_instructions} warp-instructions, {total_samples} stall samples")
    inside, small = set(), []
    for first, last in loops(code):
        body = range(first, last + 1)
        inside.update(body)
        share = max(sum(code[i]["executed"] for i in body) / max(total_instructions, 1),
                    sum(code[i]["samples"] for i in body) / max(total_samples, 1))
        if share < args.min:
            small.extend(body)
            continue
        runs = code[last]["executed"]
        report(code, f"loop of {last - first + 1} instructions, {runs} runs", body,
               total_instructions, total_samples, args.top)
    if small:
        report(code, "the smaller loops", small, total_instructions, total_samples, args.top)
    outside = [i for i in range(len(code)) if i not in inside and code[i]["executed"]]
    report(code, "outside the loops", outside, total_instructions, total_samples, args.top)


if __name__ == "__main__":
    main()
