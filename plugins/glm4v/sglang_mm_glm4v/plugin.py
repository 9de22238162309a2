"""Entry point of the plugin (group ``sglang_mm`` in pyproject.toml): pluggy hook
implementations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglang_mm_core import plugin as mm

from .family import Glm4vFamily


@mm.hookimpl
def sglang_mm_families() -> Sequence[type[mm.Family[Any]]]:
    """The families this plugin offers."""
    return [Glm4vFamily]


@mm.hookimpl
def sglang_mm_hf_image_processors() -> Sequence[type]:
    """The transformers drop-ins (imported here: they need transformers)."""
    from .hf_processor import Glm4vImageProcessorSglangMm, Glm46VImageProcessorSglangMm

    return [Glm4vImageProcessorSglangMm, Glm46VImageProcessorSglangMm]
