"""The transformers drop-in: ``Kimi_K25ImageProcessor`` (model type ``kimi_k25``) made by the
family's kernels, bit for bit: ``pixel_values`` ``[patches, 3, 14, 14]`` of every image
concatenated, and ``image_grid_thw`` ``[images, 3]``.

transformers has this class for its torchvision backend only (no PIL class), so the drop-in
subclasses it and replays its arithmetic with ``resample: "aten_u8"``; importing this module
needs torch and torchvision, and the plugin offers the class only where torchvision is
installed. The family's ``"pil"`` mode is the checkpoint's own processor, which is no
transformers backend: it is refused here (use a ``kimi`` spec for it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from transformers.models.kimi_k25.image_processing_kimi_k25 import Kimi_K25ImageProcessor

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import KernelArgumentError, ProcessedItem, SpecError

from .family import KimiFamily
from .hf import check_settings

BICUBIC = 3


class Kimi_K25ImageProcessorSglangMm(mmhf.ImageProcessor, Kimi_K25ImageProcessor):
    """``Kimi_K25ImageProcessor`` on the ``kimi`` kernels (``backend="sglang_mm"``)."""

    family = KimiFamily
    replaces = "Kimi_K25ImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        check_settings(config)

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.reference != "aten_u8":
            raise SpecError(
                "resample='pil': transformers has no PIL backend for Kimi_K25ImageProcessor "
                "(the family's 'pil' mode is the checkpoint's own processor: use a kimi spec)"
            )
        for key in ("do_resize", "do_rescale", "do_normalize"):
            mmhf.require(settings, key, True)
        mmhf.check_resample(settings, BICUBIC)
        mmhf.check_rescale_factor(settings)
        size = settings.get("size")
        height = getattr(size, "max_height", None)
        width = getattr(size, "max_width", None)
        return {
            "resample": "aten_u8",
            "patch_size": settings.get("patch_size"),
            "merge_size": settings.get("merge_size"),
            "max_patches": settings.get("max_patches"),
            "size": {"max_height": height, "max_width": width},
            "image_mean": mmhf.channels(settings["image_mean"], "image_mean"),
            "image_std": mmhf.channels(settings["image_std"], "image_std"),
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[mmhf.Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        if not items:
            raise KernelArgumentError("no images: Kimi_K25ImageProcessor needs at least one")
        grids = np.concatenate([it.aux["image_grid_thw"].array for it in items], axis=0)
        return {
            "pixel_values": mmhf.concat([mmhf.feature_array(it) for it in items]),
            "image_grid_thw": grids,
        }


__all__ = ["Kimi_K25ImageProcessorSglangMm"]
