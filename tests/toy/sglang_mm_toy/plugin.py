"""Entry point module of the toy distribution."""

from __future__ import annotations

from collections.abc import Sequence

from sglang_mm_core.plugin import Family, hookimpl

from .family import ToyFamily, ToyMRopeFamily


@hookimpl
def sglang_mm_families() -> Sequence[type[Family]]:
    return [ToyFamily, ToyMRopeFamily]
