"""The transformers drop-ins: ``Glm4vImageProcessor`` (``glm4v``, and ``glm4v_moe`` checkpoints,
which name it) and ``Glm46VImageProcessor`` (``glm46v``), made by the family's composition of
the core's kernels, bit for bit with either HF backend (the two HF classes are the same code
under two names). Images only: videos go to the video processors. Importing this module needs
transformers (``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil
from transformers.models.glm46v.image_processing_pil_glm46v import Glm46VImageProcessorPil

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import KernelArgumentError, ProcessedItem, SpecError

from .family import Glm4vFamily
from .hf import BICUBIC, check_settings


class _GlmImageProcessor(mmhf.ImageProcessor):
    """What both drop-ins share: the settings rule, HF's resolved keywords as ``glm4v``
    params, and the ``BatchFeature`` of ``pixel_values`` rows and ``image_grid_thw``."""

    family = Glm4vFamily

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        check_settings(config)

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        for key in ("do_resize", "do_normalize"):
            mmhf.require(settings, key, True)
        mmhf.check_resample(settings, BICUBIC)
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


class Glm4vImageProcessorSglangMm(_GlmImageProcessor, Glm4vImageProcessorPil):
    """``Glm4vImageProcessor`` on the ``glm4v`` family (``backend="sglang_mm"``)."""

    replaces = "Glm4vImageProcessor"


class Glm46VImageProcessorSglangMm(_GlmImageProcessor, Glm46VImageProcessorPil):
    """``Glm46VImageProcessor`` on the ``glm4v`` family (``backend="sglang_mm"``)."""

    replaces = "Glm46VImageProcessor"


__all__ = ["Glm4vImageProcessorSglangMm", "Glm46VImageProcessorSglangMm"]
