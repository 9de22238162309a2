"""Kimi's NaViT geometry, from the size alone: ``navit_resize`` of transformers'
``image_processing_kimi_k25.py``, which is ``navit_resize_image`` of the checkpoint's
``media_utils.py`` with the same float arithmetic (a scale never above 1, ``int()``
truncation, the per-side cap), then zero padding of the resized image to a multiple of
``merge_size * patch_size`` on the right and bottom."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sglang_mm_core import plugin as mm


@dataclass(frozen=True)
class NavitSize:
    """One image's geometry: the resized ``width x height``, and the padded size the patches
    are cut from (``pad_width x pad_height``, both multiples of ``merge * patch``)."""

    width: int
    height: int
    pad_width: int
    pad_height: int
    patch_size: int

    @property
    def grid(self) -> tuple[int, int]:
        """``(rows, cols)`` of patches: HF's ``image_grid_thw[1:]``."""
        return self.pad_height // self.patch_size, self.pad_width // self.patch_size

    @property
    def patches(self) -> int:
        """``get_number_of_image_patches``: every patch of the padded image."""
        rows, cols = self.grid
        return rows * cols


def navit_size(
    width: int,
    height: int,
    *,
    patch_size: int,
    merge_size: int,
    max_patches: int,
    max_size_per_side: int,
) -> NavitSize:
    """The reference's ``navit_resize``: the scale is the most restrictive of 1 (never
    upscale), the patch budget (``sqrt(max_patches / patches)``, the patch counts floored and
    at least 1) and the per-side caps (``max_size_per_side`` patches); each side is
    ``max(1, int(side * scale))``, capped at ``max_size_per_side * patch_size``; the padded
    sides are the next multiples of ``merge_size * patch_size``."""
    if width <= 0 or height <= 0:
        raise mm.KernelArgumentError(f"image {width}x{height} has a zero side")
    num_h = max(1.0, height // patch_size)
    num_w = max(1.0, width // patch_size)
    by_total = math.sqrt(max_patches / (num_h * num_w))
    cap = max_size_per_side * patch_size
    scale = min(1.0, by_total, cap / height, cap / width)
    new_h = min(max(1, int(height * scale)), cap)
    new_w = min(max(1, int(width * scale)), cap)
    factor = merge_size * patch_size
    pad_h = (factor - new_h % factor) % factor + new_h
    pad_w = (factor - new_w % factor) % factor + new_w
    return NavitSize(new_w, new_h, pad_w, pad_h, patch_size)


__all__ = ["NavitSize", "navit_size"]
