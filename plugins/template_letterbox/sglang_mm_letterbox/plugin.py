"""Entry point of the plugin (group ``sglang_mm`` in pyproject.toml)."""

from __future__ import annotations

from typing import Any

from sglang_mm_core.plugin import Family, hookimpl

from .family import LetterboxFamily


@hookimpl
def sglang_mm_families() -> list[type[Family[Any]]]:
    """The families this plugin offers."""
    return [LetterboxFamily]
