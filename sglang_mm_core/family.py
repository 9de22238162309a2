"""Deprecated module path: the implementation is private (`sglang_mm_core._family`); import
from `sglang_mm_core.plugin`."""

from ._deprecation import warn_moved_module
from ._family import (
    DEFAULT_CONFORMANCE_SIZES,
    DecodeDefaults,
    Family,
    FamilyParams,
    FeatureShape,
    Size,
)

warn_moved_module(__name__, "sglang_mm_core.plugin")

__all__ = [
    "DEFAULT_CONFORMANCE_SIZES",
    "DecodeDefaults",
    "Family",
    "FamilyParams",
    "FeatureShape",
    "Size",
]
