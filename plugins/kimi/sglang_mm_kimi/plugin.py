"""Entry point of the plugin (group ``sglang_mm`` in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglang_mm_core import plugin as mm

from .family import KimiFamily


@mm.hookimpl
def sglang_mm_families() -> list[type[mm.Family[Any]]]:
    """The families this plugin offers."""
    return [KimiFamily]


@mm.hookimpl
def sglang_mm_hf_image_processors() -> Sequence[type]:
    """The transformers drop-in, where transformers' class exists: it is torchvision only, so
    without torchvision there is nothing to replace (and nothing is offered)."""
    from transformers.utils.import_utils import is_torchvision_available

    if not is_torchvision_available():
        return []
    from .hf_processor import Kimi_K25ImageProcessorSglangMm

    return [Kimi_K25ImageProcessorSglangMm]
