"""The sweep side of training/training_study.py's command line: list and shard arguments,
the runs already complete in other logs, and SIGINT/SIGTERM handling between runs."""
import argparse
import glob
import os
import signal
import sys

import h5py

from training_log import first_difference, study_text


def parse_list(kind, allowed=None):
    def parse(value):
        items = [kind(v.strip()) for v in value.split(",") if v.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        if allowed is not None:
            for item in items:
                if item not in allowed:
                    raise argparse.ArgumentTypeError(f"{item!r} is not one of "
                                                     f"{', '.join(map(str, allowed))}")
        return items
    return parse


def positive_int(value):
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return number


def shard(value):
    try:
        index, count = (int(v) for v in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/k, got {value!r}") from None
    if count < 1 or not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"expected 0 <= i < k, got {value!r}")
    return index, count


def done_elsewhere(pattern, output, settings):
    """The keys of the complete runs in the logs matching pattern, --output left out; each log
    must hold the same study."""
    keys = set()
    for path in sorted(glob.glob(pattern)) if pattern else []:
        if os.path.abspath(path) == os.path.abspath(output):
            continue
        try:
            log = h5py.File(path, "r")
        except OSError as error:  # a sibling process creating its log this moment (locked)
            print(f"training_study.py: --done-logs: '{path}' left out: {error}",
                  file=sys.stderr, flush=True)
            continue
        with log:
            difference = first_difference(log.attrs["study"], study_text(settings))
            if difference:
                raise SystemExit(f"training_study.py: --done-logs: '{path}' is another study: "
                                 f"{difference}")
            keys |= {group.attrs["key"] for group in log["runs"].values()
                     if int(group.attrs.get("complete", 0)) == 1}
    return keys


class Interrupt:
    """The first SIGINT/SIGTERM asks the sweep to stop after the run in progress; a second one
    stops at once."""

    def __init__(self):
        self.requested = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.handle)

    def handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("training_study.py: interrupted; finishing the run in progress (again to stop "
              "at once)", file=sys.stderr, flush=True)
