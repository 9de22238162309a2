"""A tiny pure-Python family plugin for the core tests (numpy only)."""

from .family import ToyFamily, ToyMRopeFamily, ToyParams

__all__ = ["ToyFamily", "ToyMRopeFamily", "ToyParams"]
