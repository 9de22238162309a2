"""Entry point of the plugin (group ``sglang_mm``): pluggy hook implementations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglang_mm_core.plugin import Family, hookimpl

from .family import PixtralFamily


@hookimpl
def sglang_mm_families() -> Sequence[type[Family[Any]]]:
    """The families this plugin offers."""
    return [PixtralFamily]


@hookimpl
def sglang_mm_hf_image_processors() -> Sequence[type]:
    """The transformers drop-in (imported here: it needs transformers)."""
    from .hf_processor import PixtralImageProcessorSglangMm

    return [PixtralImageProcessorSglangMm]
