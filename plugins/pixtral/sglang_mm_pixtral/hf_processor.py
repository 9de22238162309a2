"""The transformers drop-in: ``PixtralImageProcessor`` (every model type transformers maps to
it: Pixtral, Mistral 3, LightOnOCR, Mistral Large 3) made by the family's kernel, bit for bit
with either HF backend. Importing this module needs transformers
(``sglang-mm-core[transformers]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from transformers.image_processing_utils import get_size_dict
from transformers.models.pixtral.image_processing_pil_pixtral import PixtralImageProcessorPil
from transformers.utils.import_utils import is_torch_available

from sglang_mm_core import hf as mmhf
from sglang_mm_core.plugin import ProcessedItem, SpecError

from .family import PixtralFamily
from .hf import _check_settings


def _longest_edge(size: Any) -> int:
    """HF's ``resize`` bound: ``longest_edge`` when set, else ``height`` and ``width`` as two
    separate bounds, which the family reproduces only when they are equal."""
    longest = getattr(size, "longest_edge", None)
    if longest:
        return int(longest)
    h, w = getattr(size, "height", None), getattr(size, "width", None)
    if h and w:
        if h != w:
            raise SpecError(
                f"size={dict(size)!r} is not supported: height and width bound the sides "
                "separately, only one longest_edge (or equal height and width) is reproduced"
            )
        return int(h)
    shown = dict(size) if size is not None else None
    raise SpecError(f"size={shown!r} must hold longest_edge (or height and width), as HF's")


def _patch_side(patch_size: Any) -> int:
    """HF's ``get_size_dict(patch_size, default_to_square=True)``, one side."""
    try:
        sides = get_size_dict(patch_size, default_to_square=True)
    except ValueError as e:
        raise SpecError(f"patch_size={patch_size!r} is not valid: {e}") from None
    h, w = sides.get("height"), sides.get("width")
    if not h or not w:
        raise SpecError(f"patch_size={patch_size!r} must hold height and width, as HF's")
    if h != w:
        raise SpecError(
            f"patch_size={patch_size!r} is not supported: only square patches are reproduced"
        )
    return int(h)


def _pad_for_batching(arrays: Sequence[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
    """HF's ``_pad_for_batching``: each ``[3, H, W]`` zero-padded at the bottom and right to
    the batch's largest height and width, stacked."""
    if len(arrays) == 1:
        return arrays[0][None]
    h = max(a.shape[1] for a in arrays)
    w = max(a.shape[2] for a in arrays)
    out = np.zeros((len(arrays), 3, h, w), dtype=np.float32)
    for k, a in enumerate(arrays):
        out[k, :, : a.shape[1], : a.shape[2]] = a
    return out


class PixtralImageProcessorSglangMm(mmhf.ImageProcessor, PixtralImageProcessorPil):
    """``PixtralImageProcessor`` on the ``pixtral`` kernel (``backend="sglang_mm"``).

    ``patch_size`` is the image processor's (``PixtralProcessor`` hands it
    ``patch_size * spatial_merge_size``): it becomes the family's token side with a merge of
    1, which gives the same resize; the token ids are the processor's business, not this
    class's."""

    family = PixtralFamily
    replaces = "PixtralImageProcessor"

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> None:
        _check_settings(config)

    def family_params(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        for key in ("do_resize", "do_normalize"):
            mmhf.require(settings, key, True)
        mmhf.require(settings, "do_center_crop", False)
        mmhf.check_resample(settings)
        mmhf.check_rescale_factor(settings)
        # As HF's _preprocess: a falsy per-call patch_size means the instance's.
        patch = _patch_side(settings.get("patch_size") or self.patch_size)
        return {
            "patch_size": patch,
            "spatial_merge_size": 1,
            "longest_edge": _longest_edge(settings.get("size")),
            "image_mean": mmhf.channels(settings["image_mean"], "image_mean"),
            "image_std": mmhf.channels(settings["image_std"], "image_std"),
            "resample": self.reference,
        }

    def batch(
        self,
        items: Sequence[ProcessedItem],
        images: Sequence[mmhf.Prepared],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        arrays = [mmhf.feature_array(it) for it in items]
        sizes = [(int(it.geometry.height), int(it.geometry.width)) for it in items]
        pixel_values: Any = _pad_for_batching(arrays) if settings.get("do_pad") else arrays
        image_sizes: list[Any] = list(sizes)
        if (
            self.reference == "aten_u8"
            and settings.get("return_tensors") is None
            and is_torch_available()
        ):
            import torch

            # HF's torchvision class answers each size as the resized tensor's torch.Size
            image_sizes = [torch.Size(s) for s in sizes]
        return {"pixel_values": pixel_values, "image_sizes": image_sizes}


__all__ = ["PixtralImageProcessorSglangMm"]
