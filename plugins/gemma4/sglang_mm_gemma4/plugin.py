"""Entry point of the plugin (group ``sglang_mm`` in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglang_mm_core import plugin as mm

from .family import Gemma4Family


@mm.hookimpl
def sglang_mm_families() -> list[type[mm.Family[Any]]]:
    """The families this plugin offers."""
    return [Gemma4Family]


@mm.hookimpl
def sglang_mm_hf_image_processors() -> Sequence[type]:
    """The transformers drop-in (imported here: it needs transformers)."""
    from .hf_processor import Gemma4ImageProcessorSglangMm

    return [Gemma4ImageProcessorSglangMm]
