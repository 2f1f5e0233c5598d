"""Prints the truncated_unrolled runs of a study log: sinkgrad run's HDF5 file."""
import sys

import h5py


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


with h5py.File(sys.argv[1], "r") as log:
    print(f"{'solver':20} {'options':8} {'n':>3} {'T':>3} {'device':6} {'error vs unrolled':>18}")
    for run in log["runs"].values():
        if text(run.attrs["solver"]) != "truncated_unrolled":
            continue
        error = run["error_vs_unrolled"].attrs["frobenius_median"]
        print(f"{text(run.attrs['solver']):20} {text(run.attrs['options']):8} "
              f"{int(run.attrs['n']):3} {int(run.attrs['T']):3} {text(run.attrs['device']):6} "
              f"{error:18.3e}")
