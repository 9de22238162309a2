"""Entry point module (group ``sglang_mm``): offers the Inkling family to the registry."""

from __future__ import annotations

from collections.abc import Sequence

import pluggy

from sglang_mm_core.family import Family

from .family import InklingFamily

hookimpl = pluggy.HookimplMarker("sglang_mm")


@hookimpl
def sglang_mm_families() -> Sequence[type[Family]]:
    return [InklingFamily]
