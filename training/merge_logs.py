#!/usr/bin/env python3
"""Several logs of one training study (e.g. one per GPU shard and part of a sweep) merged into
one HDF5 file whose datasets are gzip-compressed: what docs/results/ keeps. The merged log reads
as the logs it came from (training_results.py, plot_training.py): its header is the first log's,
with merged_from listing every source's command, start, tool version and devices; each complete
run is copied once (the first log holding its key wins, as training_results.read does).

    python3 training/merge_logs.py OUT.h5 LOG.h5 [LOG.h5 ...]
"""
import os
import sys

import h5py

from training_log import first_difference


def copy_group(source, target):
    for name, value in source.attrs.items():
        target.attrs[name] = value
    for name, item in source.items():
        if isinstance(item, h5py.Group):
            copy_group(item, target.create_group(name))
        elif item.shape and item.size > 1:
            copy = target.create_dataset(name, data=item[()], compression="gzip",
                                         compression_opts=9, shuffle=True)
            for key, value in item.attrs.items():
                copy.attrs[key] = value
        else:
            source.copy(item, target, name=name)


def merge(output, paths):
    """Writes output from paths; returns the number of runs copied."""
    if os.path.exists(output):
        raise SystemExit(f"merge_logs.py: '{output}' exists; give a new file")
    study = None
    for path in paths:  # every log checked before anything is written
        with h5py.File(path, "r") as log:
            if log.attrs.get("schema") != "sinkgrad-training-log":
                raise SystemExit(f"merge_logs.py: '{path}' is not a training-study log")
            study = study or log.attrs["study"]
            difference = first_difference(study, log.attrs["study"])
            if difference:
                raise SystemExit(f"merge_logs.py: '{path}' holds another study than "
                                 f"'{paths[0]}': {difference}")
    keys, sources = set(), []
    with h5py.File(output, "w", libver="latest") as merged:  # compact object headers
        for path in paths:
            with h5py.File(path, "r") as log:
                if not sources:
                    for name, value in log.attrs.items():
                        merged.attrs[name] = value
                    runs = merged.create_group("runs")
                    for name, value in log["runs"].attrs.items():
                        runs.attrs[name] = value
                sources.append(f"{os.path.basename(path)}: {log.attrs.get('command', '')} "
                               f"(started {log.attrs.get('started', '')}, tool "
                               f"{log.attrs.get('tool_version', '')}, "
                               f"{log.attrs.get('devices', '')})")
                for group in log["runs"].values():
                    key = group.attrs["key"]
                    if int(group.attrs.get("complete", 0)) != 1 or key in keys:
                        continue
                    keys.add(key)
                    copy_group(group, runs.create_group(os.path.basename(group.name)))
        merged.attrs["merged_from"] = "\n".join(sources)
    return len(keys)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    count = merge(sys.argv[1], sys.argv[2:])
    print(f"merge_logs.py: {sys.argv[1]}: {count} runs from {len(sys.argv) - 2} logs")
