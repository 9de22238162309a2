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


def check_side_limit(size: NavitSize, width: int, height: int, merge_size: int, limit: int) -> None:
    """The checkpoint's ``navit_resize_image`` asserts that the padded token grid fits the
    per-side patch limit (only a limit that is odd against the merge size can break it):
    refused here with a `KernelArgumentError`, as transformers' class has no such check."""
    rows, cols = size.grid
    if max(rows, cols) > limit - limit % merge_size:
        raise mm.KernelArgumentError(
            f"a {width}x{height} image pads to {rows}x{cols} patches, more than the per-side "
            f"limit of {limit} patches allows in whole {merge_size}x{merge_size} tokens (the "
            "checkpoint's navit_resize_image asserts this)"
        )


def capped_navit_size(
    width: int,
    height: int,
    *,
    patch_size: int,
    merge_size: int,
    max_patches: int,
    max_size_per_side: int,
) -> NavitSize:
    """Kimi K3's ``get_resize_config``: the checkpoint's `navit_size` (its per-side assert
    included, every round) under a patch budget lowered until the padded grid holds at most
    ``max_patches // merge_size**2`` tokens, which the padding can push the first plan over.
    Each round the budget becomes ``min(budget - 1, int(budget * max_tokens / tokens))``, so
    it shrinks; at 0 the image is 1x1, one token, which fits (``max_patches >=
    merge_size**2`` is a params rule), so the loop ends before the budget turns negative."""
    max_tokens = max_patches // merge_size**2
    budget = max_patches
    while True:
        size = navit_size(
            width,
            height,
            patch_size=patch_size,
            merge_size=merge_size,
            max_patches=budget,
            max_size_per_side=max_size_per_side,
        )
        check_side_limit(size, width, height, merge_size, max_size_per_side)
        tokens = size.patches // merge_size**2
        if tokens <= max_tokens:
            return size
        budget = min(budget - 1, int(budget * max_tokens / tokens))


__all__ = ["NavitSize", "capped_navit_size", "check_side_limit", "navit_size"]
