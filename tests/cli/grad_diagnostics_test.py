#!/usr/bin/env python3
"""`sinkgrad grad`'s diagnostics datasets against numpy, through the real binary.

    grad_diagnostics_test.py SINKGRAD_CLI

The violations and zero counts are recomputed from the R the output file holds; CG's final
relative residual is bounded by the tolerance where the status is ok, NaN for solvers without
CG, and after two CG steps equal to that of an independent numpy CG on the corrected Schur
system. Exits 77 (skipped) without h5py.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import h5py
except ImportError:
    print("skipped: no h5py")
    sys.exit(77)

CLI = sys.argv[1]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def write_input(path, logits, grad_output):
    with h5py.File(path, "w") as f:
        f["logits"] = logits
        f["grad_output"] = grad_output


def grad(input_path, output_path, solver, T, dtype, options=()):
    command = [CLI, "grad", "-i", input_path, "-o", output_path, "-s", solver, "-T", str(T),
               "--dtype", dtype]
    for option in options:
        command += ["--option", option]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    with h5py.File(output_path, "r") as f:
        return {name: f[name][()] for name in ("R", "status", "iterations")}, {
            name: f["diagnostics"][name][()]
            for name in ("row_violation", "column_violation", "relative_residual",
                         "zero_entries")}


def numpy_violations(R):
    R64 = R.astype(np.float64)
    rows = np.abs(R64.sum(axis=2) - 1).max(axis=1)
    columns = np.abs(R64.sum(axis=1) - 1).max(axis=1)
    zeros = (R == 0).sum(axis=(1, 2))
    return rows, columns, zeros


def numpy_cg_residual(R, G, steps):
    """||r_k|| / ||b|| of CG from 0 on the corrected Schur system, b without its mean."""
    R = R.astype(np.float64)
    G = G.astype(np.float64)
    out = []
    for Rb, Gb in zip(R, G):
        r, c = Rb.sum(axis=1), Rb.sum(axis=0)
        s_r, s_c = (Rb * Gb).sum(axis=1), (Rb * Gb).sum(axis=0)
        S = np.diag(c) - Rb.T @ np.diag(1 / r) @ Rb
        b = s_c - Rb.T @ (s_r / r)
        b = b - b.mean()
        x, res, p = np.zeros_like(b), b.copy(), b.copy()
        for _ in range(steps):
            Sp = S @ p
            step = (res @ res) / (p @ Sp)
            x += step * p
            new = res - step * Sp
            p = new + (new @ new) / (res @ res) * p
            res = new
        out.append(np.linalg.norm(res) / np.linalg.norm(b))
    return np.array(out)


def check_violations(label, R, diagnostics, dtype):
    rows, columns, zeros = numpy_violations(R)
    # float64 sums in another order, rounded to the output precision.
    rtol = 2.0 ** -23 if dtype == "float32" else 1e-13
    for name, expected in (("row_violation", rows), ("column_violation", columns)):
        got = diagnostics[name].astype(np.float64)
        check(got.shape == expected.shape, f"{label}: {name} shape {got.shape}")
        check(np.allclose(got, expected, rtol=rtol, atol=1e-15 * R.shape[1]),
              f"{label}: {name} differs from numpy by {np.max(np.abs(got - expected))}")
    check(diagnostics["zero_entries"].dtype == np.int32, f"{label}: zero_entries is not int32")
    check(np.array_equal(diagnostics["zero_entries"], zeros), f"{label}: zero_entries")
    return zeros


def main():
    rng = np.random.default_rng(int(os.environ.get("SINKGRAD_TEST_SEED", "20261201")))
    tolerances = {"float32": 1e-5, "float64": 1e-12}
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.h5"), os.path.join(tmp, "out.h5")
        cases = [(4, 1, "float64", 4.0), (5, 3, "float64", 4.0), (16, 3, "float32", 4.0),
                 (5, 1, "float32", 80.0), (16, 3, "float32", 80.0)]
        for n, T, dtype, scale in cases:
            B = 64
            logits = rng.uniform(-scale, scale, size=(B, n, n)).astype(dtype)
            grad_output = rng.normal(size=(B, n, n)).astype(dtype)
            write_input(inp, logits, grad_output)
            for solver in ("unrolled", "cg_corrected", "cg_plain", "direct"):
                label = f"{solver} n={n} T={T} {dtype} |M|<={scale}"
                # floor=0: CG's relative test alone, so that ok means a residual within the
                # tolerance (the floor may stop CG above it where b cancels).
                options = ("floor=0",) if solver.startswith("cg_") else ()
                data, diagnostics = grad(inp, out, solver, T, dtype, options)
                zeros = check_violations(label, data["R"], diagnostics, dtype)
                if scale == 80.0 and n == 16:
                    check(np.any(zeros > 0), f"{label}: no saturated matrix in the input")
                residual = diagnostics["relative_residual"]
                if solver.startswith("cg_"):
                    ok = data["status"] == 0
                    check(np.all(residual[ok] <= tolerances[dtype]),
                          f"{label}: relative residual above tolerance with status ok: "
                          f"{residual[ok].max()}")
                    check(np.all(np.isnan(residual[data["status"] == 3])),
                          f"{label}: invalid_input has a residual")
                else:
                    check(np.all(np.isnan(residual)), f"{label}: residual of {solver} not NaN")

        # Two CG steps, not converged at n = 8: the residual numpy's CG reaches.
        n, B, T = 8, 32, 2
        logits = rng.uniform(0, 4, size=(B, n, n))
        grad_output = rng.normal(size=(B, n, n))
        write_input(inp, logits, grad_output)
        data, diagnostics = grad(inp, out, "cg_corrected", T, "float64", ["max_iterations=2"])
        check(np.all(data["status"] == 1), "cg_corrected max_iterations=2 converged")
        expected = numpy_cg_residual(data["R"], grad_output, 2)
        got = diagnostics["relative_residual"]
        check(np.allclose(got, expected, rtol=1e-8),
              f"two CG steps: residual differs from numpy by "
              f"{np.max(np.abs(got - expected) / expected)} (relative)")
        check(np.all(got > tolerances["float64"]), "two CG steps: residual at tolerance")

        # An input compressed with a filter this HDF5 lacks (h5py's LZF, which compresses the
        # zeros) is named as such, and the output is not written.
        lzf, refused = os.path.join(tmp, "lzf.h5"), os.path.join(tmp, "refused.h5")
        with h5py.File(lzf, "w") as f:
            f.create_dataset("logits", data=np.zeros((64, 3, 3)), compression="lzf")
            f.create_dataset("grad_output", data=np.zeros((64, 3, 3)), compression="lzf")
        done = subprocess.run([CLI, "grad", "-i", lzf, "-o", refused, "-s", "unrolled"],
                              capture_output=True, text=True)
        readable = done.returncode == 0  # an HDF5 built with the LZF plugin reads it
        check(readable or ("filter 32000 (lzf)" in done.stderr and done.returncode == 1),
              f"LZF input: exit {done.returncode}, {done.stderr.strip()}")
        check(readable or not os.path.exists(refused), "LZF input: an output was written")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("grad diagnostics: ok")


if __name__ == "__main__":
    main()
