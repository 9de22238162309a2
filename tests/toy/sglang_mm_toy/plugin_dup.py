"""Entry point module of a second distribution that claims the family name ``toy`` too."""

from __future__ import annotations

from collections.abc import Sequence

from sglang_mm_core.plugin import Family, hookimpl

from .family import ToyFamily


class OtherToyFamily(ToyFamily):
    pass


@hookimpl
def sglang_mm_families() -> Sequence[type[Family]]:
    return [OtherToyFamily]
