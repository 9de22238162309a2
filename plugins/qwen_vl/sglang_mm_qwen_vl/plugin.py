"""Entry point of the plugin (group ``sglang_mm``): pluggy hook implementations."""

from __future__ import annotations

import pluggy

from sglang_mm_core.family import Family

from .family import QwenVL

hookimpl = pluggy.HookimplMarker("sglang_mm")


@hookimpl
def sglang_mm_families() -> list[type[Family]]:
    """The families this plugin offers."""
    return [QwenVL]
