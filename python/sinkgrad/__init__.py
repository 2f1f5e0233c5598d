"""sinkgrad from Python: the Sinkhorn forward and every registered backward solver of
libsinkgrad, reached through its C ABI (libsinkgrad_c) with ctypes.

    import sinkgrad.torch as sgt           # the differentiable PyTorch layer (docs/pytorch.md)
    R = sgt.sinkhorn(logits, 20, backward="cg_corrected")

This package needs no compiler and does not depend on PyTorch's C++ ABI: any PyTorch works.
"""
from sinkgrad._capi import STATUS_NAMES, SinkgradError, library, load_plugin

__all__ = ["STATUS_NAMES", "SinkgradError", "library", "load_plugin"]
