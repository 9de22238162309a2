"""The `square` family: the sglang-mm plugin template (see README.md)."""

from .family import Square, SquareParams

__all__ = ["Square", "SquareParams"]
