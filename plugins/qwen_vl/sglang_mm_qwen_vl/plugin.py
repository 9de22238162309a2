"""Entry point of the plugin (group ``sglang_mm``): pluggy hook implementations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglang_mm_core.plugin import Family, hookimpl

from .family import QwenVLFamily


@hookimpl
def sglang_mm_families() -> Sequence[type[Family[Any]]]:
    """The families this plugin offers."""
    return [QwenVLFamily]
