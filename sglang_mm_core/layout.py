"""Deprecated module path: the implementation is private (`sglang_mm_core._layout`); import
from `sglang_mm_core.plugin`."""

from ._deprecation import warn_moved_module
from ._layout import (
    Expanded,
    Explicit,
    Media,
    Pattern,
    Repeat,
    Segment,
    Text,
    TokenLayout,
    apply_layout,
    layout_by_placeholder,
    layout_by_placeholder_patterns,
    placeholder_indices,
)

warn_moved_module(__name__, "sglang_mm_core.plugin")

__all__ = [
    "Expanded",
    "Explicit",
    "Media",
    "Pattern",
    "Repeat",
    "Segment",
    "Text",
    "TokenLayout",
    "apply_layout",
    "layout_by_placeholder",
    "layout_by_placeholder_patterns",
    "placeholder_indices",
]
