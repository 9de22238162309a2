"""Deprecated module path: the implementation is private (`sglang_mm_core._carriers`); import
from `sglang_mm_core` (requests and outputs) or `sglang_mm_core.plugin` (family authors)."""

from ._carriers import (
    DType,
    Geometry,
    MmInput,
    MmItem,
    MmOutput,
    ProcessedItem,
    Source,
    Tensor,
    TokenCount,
)
from ._deprecation import warn_moved_module

warn_moved_module(__name__, "sglang_mm_core or sglang_mm_core.plugin")

__all__ = [
    "DType",
    "Geometry",
    "MmInput",
    "MmItem",
    "MmOutput",
    "ProcessedItem",
    "Source",
    "Tensor",
    "TokenCount",
]
