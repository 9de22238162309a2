"""The transformers drop-in: ``Qwen2VLImageProcessor`` (every Qwen-VL model type transformers
maps to it) made by the family's kernel, bit for bit with either HF backend. Importing this
module needs transformers (``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from sglang_mm_core import hf as mmhf

from .family import QwenVLFamily
from .hf import _check_settings


class Qwen2VLImageProcessorSglangMm(mmhf.PatchRowsImageProcessor, Qwen2VLImageProcessorPil):
    """``Qwen2VLImageProcessor`` on the ``qwen_vl`` kernel (``backend="sglang_mm"``): HF's
    settings read, and ``pixel_values`` / ``image_grid_thw`` answered, by the core's
    `PatchRowsImageProcessor`."""

    family = QwenVLFamily
    replaces = "Qwen2VLImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        _check_settings(config)


__all__ = ["Qwen2VLImageProcessorSglangMm"]
