"""sinkgrad from Python: the Sinkhorn forward and every registered backward solver of
libsinkgrad, reached through its C ABI (libsinkgrad_c) with ctypes.

    import sinkgrad.torch as sgt           # the differentiable PyTorch layer (docs/pytorch.md)
    R = sgt.sinkhorn(logits, 20, backward="cg_corrected")

This package needs no compiler and does not depend on PyTorch's C++ ABI: any PyTorch works.
"""
from sinkgrad._capi import STATUS_NAMES, SinkgradError, library, load_plugin

try:
    from sinkgrad._version import __version__  # written by the build from project(VERSION)
except ImportError:  # the source tree's copy (python/sinkgrad), which no build wrote into
    __version__ = "unknown"

__all__ = ["STATUS_NAMES", "SinkgradError", "library", "load_plugin", "__version__"]
