"""The package as `cmake --install` lays it out: imported from PREFIX's Python directory (not
the build tree), it loads the installed libsinkgrad_c and computes a gradient.

    PYTHONPATH=PREFIX/share/sinkgrad/python python3 tests/torch/installed_test.py PREFIX
"""
import os
import sys
import unittest

from reference import inputs, relative, unrolled_torch

PREFIX = None


class Installed(unittest.TestCase):
    def test_imports_and_solves_from_the_prefix(self):
        import sinkgrad.torch as sgt
        from sinkgrad._capi import library
        self.assertTrue(os.path.realpath(sgt.__file__).startswith(PREFIX), sgt.__file__)
        self.assertTrue(os.path.realpath(library().path).startswith(PREFIX), library().path)
        self.assertTrue(os.path.exists(os.path.join(PREFIX, "include", "sinkgrad",
                                                    "sinkgrad_c.h")))
        M, G = inputs(4, 5, seed=50)
        M.requires_grad_(True)
        sgt.sinkhorn(M, 6).backward(G)
        self.assertLess(relative(M.grad, unrolled_torch(M, 6, G)), 1e-10)


if __name__ == "__main__":
    PREFIX = os.path.realpath(sys.argv.pop(1))
    os.environ.pop("SINKGRAD_C_LIB", None)
    unittest.main()
