"""Prints the truncated_unrolled runs of a study log (the HDF5 file of `sinkgrad run`)."""
import sys

try:
    import h5py
except ImportError:
    sys.exit("show_log.py needs h5py: apt-get install python3-h5py (or pip install h5py)")


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


with h5py.File(sys.argv[1], "r") as log:
    rows = []
    for run in log["runs"].values():
        if text(run.attrs["solver"]) == "truncated_unrolled":
            rows.append((int(run.attrs["n"]), int(run.attrs["T"]), int(run.attrs["option.k"]),
                         text(run.attrs["device"]),
                         run["error_vs_unrolled"].attrs["frobenius_median"]))
    print(" n   T   k device  median ||dM - dM_unrolled|| / ||dM_unrolled||")
    for n, T, k, device, error in sorted(rows):
        print(f"{n:2} {T:3} {k:3} {device:6}  {error:.3e}")
