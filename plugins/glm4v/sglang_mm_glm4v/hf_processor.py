"""The transformers drop-ins: ``Glm4vImageProcessor`` (``glm4v``, and ``glm4v_moe`` checkpoints,
which name it) and ``Glm46VImageProcessor`` (``glm46v``), made by the family's composition of
the core's kernels, bit for bit with either HF backend (the two HF classes are the same code
under two names). Their settings and answer are Qwen2-VL's (``pixel_values`` rows and
``image_grid_thw``), which the core's `PatchRowsImageProcessor` reads and writes. Images only:
videos go to the video processors. Importing this module needs transformers
(``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil
from transformers.models.glm46v.image_processing_pil_glm46v import Glm46VImageProcessorPil

from sglang_mm_core import hf as mmhf

from .family import Glm4vFamily
from .hf import check_settings


class _GlmImageProcessor(mmhf.PatchRowsImageProcessor):
    """What both drop-ins share: the family and the settings rule of `spec_from_hf`."""

    family = Glm4vFamily

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        check_settings(config)


class Glm4vImageProcessorSglangMm(_GlmImageProcessor, Glm4vImageProcessorPil):
    """``Glm4vImageProcessor`` on the ``glm4v`` family (``backend="sglang_mm"``)."""

    replaces = "Glm4vImageProcessor"


class Glm46VImageProcessorSglangMm(_GlmImageProcessor, Glm46VImageProcessorPil):
    """``Glm46VImageProcessor`` on the ``glm4v`` family (``backend="sglang_mm"``)."""

    replaces = "Glm46VImageProcessor"


__all__ = ["Glm4vImageProcessorSglangMm", "Glm46VImageProcessorSglangMm"]
