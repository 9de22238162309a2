"""Deprecated module path: the implementation is private (`sglang_mm_core._positions`); import
from `sglang_mm_core.plugin`."""

from ._deprecation import warn_moved_module
from ._positions import (
    MRope,
    Rope1D,
    mrope_positions,
)

warn_moved_module(__name__, "sglang_mm_core.plugin")

__all__ = [
    "MRope",
    "Rope1D",
    "mrope_positions",
]
