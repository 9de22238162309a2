"""The ``clip`` family: the sglang-mm template of a family the core composes (README.md)."""

from .family import ClipFamily, ClipParams

__all__ = ["ClipFamily", "ClipParams"]
