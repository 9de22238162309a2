"""Entry point of the plugin (group ``sglang_mm`` in pyproject.toml)."""

from __future__ import annotations

from typing import Any

from sglang_mm_core import plugin as mm

from .family import KimiFamily


@mm.hookimpl
def sglang_mm_families() -> list[type[mm.Family[Any]]]:
    """The families this plugin offers."""
    return [KimiFamily]
