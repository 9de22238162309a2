"""Entry point module (group ``sglang_mm``): offers the Inkling family to the registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglang_mm_core.plugin import Family, hookimpl

from .family import InklingFamily


@hookimpl
def sglang_mm_families() -> Sequence[type[Family[Any]]]:
    """The families this plugin offers."""
    return [InklingFamily]
