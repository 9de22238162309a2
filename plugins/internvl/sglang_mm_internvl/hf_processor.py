"""The transformers drop-in: ``GotOcr2ImageProcessor`` (every model type transformers maps to it:
internvl, got_ocr2, aya_vision, qianfan_ocr) made by the family's kernel, bit for bit with either
HF backend. Importing this module needs transformers (``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import ProcessedItem, SpecError

from .family import InternVLFamily
from .hf import _check_settings
from .params import MAX_PATCHES_CAP


def _int(settings: Mapping[str, Any], key: str) -> int:
    value = settings.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"{key}={value!r} must be an integer")
    return value


class GotOcr2ImageProcessorSglangMm(mmhf.ImageProcessor, GotOcr2ImageProcessorPil):
    """``GotOcr2ImageProcessor`` on the ``internvl`` kernel (``backend="sglang_mm"``): an
    aspect-ratio grid of square tiles plus a thumbnail when ``crop_to_patches``, else the whole
    image resized to one tile."""

    family = InternVLFamily
    replaces = "GotOcr2ImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        _check_settings(config)

    def _hf_crops(self, settings: Mapping[str, Any]) -> bool:
        """Whether HF's backend takes its tiling branch for these settings (the PIL backend
        also needs ``max_patches > 1``; the torchvision one tiles whenever asked)."""
        crop = bool(settings.get("crop_to_patches"))
        if self.reference == "pil":
            return crop and _int(settings, "max_patches") > 1
        return crop

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        mmhf.require(settings, "do_normalize", True)
        mmhf.check_resample(settings)
        mmhf.check_rescale_factor(settings)
        crops = self._hf_crops(settings)
        # HF's tiling branch resizes whatever do_resize says; the PIL backend's other branch
        # (and the torchvision backend's second resize) honours it: only resizing is ours.
        if not (crops and self.reference == "pil"):
            mmhf.require(settings, "do_resize", True)
        size = settings.get("size")
        height, width = getattr(size, "height", None), getattr(size, "width", None)
        if not height or not width:
            raise SpecError(f"size must hold height and width, got {size}")
        if height != width:
            shown = {"height": height, "width": width}
            raise SpecError(f"size={shown} is not square: only square tiles are reproduced")
        tiles: dict[str, Any] = {"crop_to_patches": False, "min_patches": 1, "max_patches": 1}
        if crops:
            lo, hi = max(1, _int(settings, "min_patches")), _int(settings, "max_patches")
            # No grid of lo..hi tiles (or hi <= 1): HF falls back to the 1x1 grid, one tile
            # and no thumbnail, which is the untiled image.
            if lo <= hi and hi > 1:
                if hi > MAX_PATCHES_CAP:
                    raise SpecError(
                        f"max_patches={hi} is not supported: at most {MAX_PATCHES_CAP} tiles"
                    )
                tiles = {"crop_to_patches": True, "min_patches": lo, "max_patches": hi}
        return {
            "tile_size": height,
            **tiles,
            "image_mean": mmhf.channels(settings["image_mean"], "image_mean"),
            "image_std": mmhf.channels(settings["image_std"], "image_std"),
            "resample": self.reference,
            "tiling": "hf",
            "pil_pass_order": mmhf.installed_pass_order(),
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[mmhf.Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        # One [3, T, T] array per tile, one int per image.
        return {
            "pixel_values": mmhf.parts(items, settings),
            "num_patches": [int(it.aux["num_patches"].array[0]) for it in items],
        }


__all__ = ["GotOcr2ImageProcessorSglangMm"]
