"""The transformers drop-in: ``Gemma3ImageProcessor`` (every model type transformers maps to it)
made by the family's kernel, bit for bit with either HF backend, pan and scan included.
Importing this module needs transformers (``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import ProcessedItem, SpecError

from .family import Gemma3Family
from .hf import BILINEAR, _check_settings
from .params import Gemma3Params

# The phrases' ids only shape the prompt, never the pixels: the image processor has no
# tokenizer, so pan and scan runs with placeholder ids (Gemma3Processor expands the text).
_PHRASE_IDS = {"pan_and_scan_prefix_ids": (0,), "pan_and_scan_infix_ids": (0,)}
_PAS_KEYS = (
    "pan_and_scan_min_crop_size",
    "pan_and_scan_max_num_crops",
    "pan_and_scan_min_ratio_to_activate",
)
_PAS_DEFAULTS = {k: Gemma3Params.model_fields[k].default for k in _PAS_KEYS}


class Gemma3ImageProcessorSglangMm(mmhf.ImageProcessor, Gemma3ImageProcessorPil):
    """``Gemma3ImageProcessor`` on the ``gemma3`` kernel (``backend="sglang_mm"``): every image,
    and with ``do_pan_and_scan`` each of its crops, resized bilinearly to one square."""

    family = Gemma3Family
    replaces = "Gemma3ImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        _check_settings(config)

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        mmhf.require(settings, "do_resize", True)
        mmhf.require(settings, "do_normalize", True)
        mmhf.check_resample(settings, BILINEAR)
        size = settings.get("size")
        height, width = getattr(size, "height", None), getattr(size, "width", None)
        others = {k: v for k, v in dict(size or {}).items() if v is not None}
        if not height or not width or set(others) != {"height", "width"}:
            raise SpecError(f"size must hold height and width only, got {others}")
        if height != width:
            raise SpecError(f"size={others} is not square: only square outputs are reproduced")
        # With do_rescale off (a float image in [0, 1]), HF's resize divides by 255 itself and
        # the factor is unused; the base refuses any other combination.
        factor = settings.get("rescale_factor") if settings.get("do_rescale") else 1 / 255
        if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 0:
            raise SpecError(f"rescale_factor={factor!r} must be a positive number")
        pas: dict[str, Any] = {"do_pan_and_scan": False, **_PAS_DEFAULTS}
        if settings.get("do_pan_and_scan"):
            pas = {"do_pan_and_scan": True, **_PHRASE_IDS}
            for key in _PAS_KEYS:
                value = settings.get(key)
                if value is None or isinstance(value, bool):
                    # HF's pan_and_scan compares against it and fails with a TypeError.
                    raise SpecError(f"{key}={value!r}: do_pan_and_scan needs a number for it")
                pas[key] = value
        return {
            "resample": self.reference,
            "size": height,
            "rescale_factor": float(factor),
            "image_mean": mmhf.channels(settings["image_mean"], "image_mean"),
            "image_std": mmhf.channels(settings["image_std"], "image_std"),
            **pas,
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[mmhf.Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        # One [3, S, S] array per image and crop, one int per image.
        return {
            "pixel_values": mmhf.parts(items, settings),
            "num_crops": [int(it.aux["num_crops"].array[0]) for it in items],
        }


__all__ = ["Gemma3ImageProcessorSglangMm"]
