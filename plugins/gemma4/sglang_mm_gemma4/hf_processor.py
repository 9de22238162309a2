"""The transformers drop-in: ``Gemma4ImageProcessor`` (every model type transformers maps to it)
made by the family's kernels, bit for bit with either HF backend: ``pixel_values`` ``[batch,
max_patches, 3 * patch_size**2]``, ``image_position_ids`` and ``num_soft_tokens_per_image``.
Images only: videos and audio go to Gemma 4's other processors, and are refused here by name.
Importing this module needs transformers (``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import (
    KernelArgumentError,
    ProcessedItem,
    SpecError,
    UnsupportedModalityError,
)

from .family import Gemma4Family
from .hf import BICUBIC, check_settings

# What Gemma4Processor hands its other sub-processors; given to the image processor, they
# would otherwise be a TypeError about a keyword, far from the cause.
_OTHER_MODALITIES = {
    "videos": "its video processor (Gemma4VideoProcessor)",
    "audio": "its feature extractor (Gemma4AudioFeatureExtractor)",
}


def _number(settings: Mapping[str, Any], key: str) -> Any:
    value = settings.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise SpecError(f"{key}={value!r} must be a positive number")
    return value


class Gemma4ImageProcessorSglangMm(mmhf.ImageProcessor, Gemma4ImageProcessorPil):
    """``Gemma4ImageProcessor`` on the ``gemma4`` kernels (``backend="sglang_mm"``): every
    image resized to its patch budget, cut into patch vectors zero-padded to
    ``max_soft_tokens * pooling_kernel_size**2``, with their positions."""

    family = Gemma4Family
    replaces = "Gemma4ImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        check_settings(config)

    def preprocess(self, images: Any, *args: Any, **kwargs: Any) -> Any:
        for key, where in _OTHER_MODALITIES.items():
            if kwargs.get(key) is not None:
                raise UnsupportedModalityError(
                    f"{type(self).__name__}: {key}= is not supported: it makes images only "
                    f"(Gemma4Processor hands {key} to {where})"
                )
        return super().preprocess(images, *args, **kwargs)

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        mmhf.require(settings, "do_resize", True)
        mmhf.check_resample(settings, BICUBIC)
        # With do_rescale off (a float image in [0, 1]), HF's resize divides by 255 itself and
        # the factor is unused; the base refuses any other combination.
        factor = _number(settings, "rescale_factor") if settings.get("do_rescale") else 1 / 255
        normalize = bool(settings.get("do_normalize"))
        return {
            "resample": self.reference,
            "patch_size": settings.get("patch_size"),
            "max_soft_tokens": settings.get("max_soft_tokens"),
            "pooling_kernel_size": settings.get("pooling_kernel_size"),
            "do_rescale": True,
            "rescale_factor": float(factor),
            "do_normalize": normalize,
            "image_mean": mmhf.channels(settings["image_mean"], "image_mean")
            if normalize
            else (0.0, 0.0, 0.0),
            "image_std": mmhf.channels(settings["image_std"], "image_std")
            if normalize
            else (1.0, 1.0, 1.0),
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[mmhf.Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        if not items:
            raise KernelArgumentError("no images: Gemma 4's processor stacks at least one")
        for i, (item, image) in enumerate(zip(items, images, strict=True)):
            # HF skips the resize of an image already at its target size, so a [0, 1] float
            # image keeps its own values (and dtype) instead of the uint8 round trip the
            # resize makes: not the kernel's samples.
            h, w = image.rgb.shape[:2]
            if image.prescaled and (item.geometry.height, item.geometry.width) == (h, w):
                raise KernelArgumentError(
                    f"image {i}: a [0, 1] float image already at its {w}x{h} target size is "
                    "not resized by HF and keeps its float values, which this processor does "
                    "not reproduce: pass it as uint8 (or integer-valued floats, with "
                    "do_rescale=True)"
                )
        return {
            "pixel_values": mmhf.stack([mmhf.feature_array(it) for it in items]),
            "image_position_ids": mmhf.stack([it.aux["image_position_ids"].array for it in items]),
            "num_soft_tokens_per_image": [
                int(it.aux["num_soft_tokens_per_image"].array[0]) for it in items
            ],
        }


__all__ = ["Gemma4ImageProcessorSglangMm"]
