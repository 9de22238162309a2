"""The transformers drop-in: ``Qwen2VLImageProcessor`` (every Qwen-VL model type transformers
maps to it) made by the family's kernel, bit for bit with either HF backend. Importing this
module needs transformers (``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import KernelArgumentError, ProcessedItem, SpecError

from .family import QwenVLFamily
from .hf import _check_settings


class Qwen2VLImageProcessorSglangMm(mmhf.ImageProcessor, Qwen2VLImageProcessorPil):
    """``Qwen2VLImageProcessor`` on the ``qwen_vl`` kernel (``backend="sglang_mm"``)."""

    family = QwenVLFamily
    replaces = "Qwen2VLImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        _check_settings(config)

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        for key in ("do_resize", "do_normalize"):
            mmhf.require(settings, key, True)
        mmhf.check_resample(settings)
        mmhf.check_rescale_factor(settings)
        size = settings.get("size") or {}
        lo, hi = getattr(size, "shortest_edge", None), getattr(size, "longest_edge", None)
        if not lo or not hi:
            raise SpecError(f"size must hold shortest_edge and longest_edge, got {size}")
        return {
            "patch_size": settings["patch_size"],
            "merge_size": settings["merge_size"],
            "temporal_patch_size": settings["temporal_patch_size"],
            "min_pixels": lo,
            "max_pixels": hi,
            "image_mean": mmhf.channels(settings["image_mean"], "image_mean"),
            "image_std": mmhf.channels(settings["image_std"], "image_std"),
            "resample": self.reference,
            "pil_pass_order": mmhf.installed_pass_order(),
            "strict_layout": False,
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[mmhf.Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        if not items:  # HF's concatenation of nothing fails too
            raise KernelArgumentError("no images given")
        return {
            "pixel_values": mmhf.concat([mmhf.feature_array(it) for it in items]),
            "image_grid_thw": mmhf.concat([it.aux["image_grid_thw"].array for it in items]),
        }


__all__ = ["Qwen2VLImageProcessorSglangMm"]
