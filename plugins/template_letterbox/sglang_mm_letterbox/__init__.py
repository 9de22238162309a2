"""The ``letterbox`` family: the sglang-mm template of a family with its own Rust kernel
(README.md)."""

from .family import LetterboxFamily, LetterboxParams

__all__ = ["LetterboxFamily", "LetterboxParams"]
