#!/usr/bin/env python3
"""Writes data/logits.h5: small batches of Sinkhorn logits for studies that read a file.

    python3 data/make_logits.py [OUTPUT.h5]

Deterministic (numpy's PCG64 with seed 20261122), float32, each dataset of shape (B, n, n):

  mhc_like_n4    (256, 4, 4)   identity-dominant logits, like the residual-mixing matrices of
                               DeepSeek's mHC early in training: 2 * I + N(0, 0.5^2)
  peaked_n8      (128, 8, 8)   heavy-tailed logits: a few large entries per row,
                               Student-t(3) scaled by 2
  wide_n16       (64, 16, 16)  uniform(-6, 6): peaked rows and columns, a slow forward

Every dataset carries the attribute `recipe` with the line above.
"""

import os
import sys

try:
    import h5py
    import numpy as np
except ImportError as error:
    # As every script of the project (docs/experiments.md, "Python"): a python3 without the
    # Debian packages (pyenv, venv) hands over to /usr/bin/python3 once.
    if os.path.exists("/usr/bin/python3") and not os.environ.get("SINKGRAD_PYTHON_REEXEC") \
            and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.environ["SINKGRAD_PYTHON_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"make_logits.py: {error}; install python3-numpy python3-h5py")

SEED = 20261122


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "data/logits.h5"
    rng = np.random.default_rng(SEED)
    datasets = {
        "mhc_like_n4": ("2 * I + N(0, 0.5^2)",
                        2.0 * np.eye(4)[None] + 0.5 * rng.standard_normal((256, 4, 4))),
        "peaked_n8": ("2 * Student-t(3)", 2.0 * rng.standard_t(3, size=(128, 8, 8))),
        "wide_n16": ("uniform(-6, 6)", rng.uniform(-6.0, 6.0, size=(64, 16, 16))),
    }
    with h5py.File(path, "w") as out:
        out.attrs["made_by"] = "data/make_logits.py"
        out.attrs["seed"] = SEED
        for name, (recipe, values) in datasets.items():
            dataset = out.create_dataset(name, data=values.astype(np.float32))
            dataset.attrs["recipe"] = recipe
    print(path)


if __name__ == "__main__":
    main()
