"""Gemma 4's geometry, shared by images and video frames: the patch-budget size an image (or
frame) is resized to, and the ``(x, y)`` position of each of its patches."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm


def aspect_ratio_preserving_size(
    height: int, width: int, patch_size: int, max_patches: int, pooling_kernel_size: int
) -> tuple[int, int]:
    """HF's ``get_aspect_ratio_preserving_size``: the resized ``(H, W)``, with its float
    arithmetic, its edge cases (a side that floors to 0 becomes one multiple, the other the
    aspect ratio's floor in multiples, capped at the longest side) and its errors, raised as
    `KernelArgumentError`."""
    target_px = max_patches * patch_size**2
    factor = math.sqrt(target_px / (height * width))
    side = pooling_kernel_size * patch_size
    h = math.floor(factor * height / side) * side
    w = math.floor(factor * width / side) * side
    if h == 0 and w == 0:
        raise mm.KernelArgumentError(
            f"a {width}x{height} image resizes to 0x0 under Gemma 4's patch budget"
        )
    longest = (max_patches // pooling_kernel_size**2) * side
    if h == 0:
        h, w = side, min(math.floor(width / height) * side, longest)
    elif w == 0:
        h, w = min(math.floor(height / width) * side, longest), side
    if h * w > target_px:
        raise mm.KernelArgumentError(
            f"a {width}x{height} image resizes to {w}x{h}, over the budget of {max_patches} "
            f"patches of {patch_size}"
        )
    return h, w


def position_ids(rows: int, cols: int, max_patches: int) -> npt.NDArray[np.int64]:
    """``[max_patches, 2]``: each patch's ``(x, y)`` in row-major order, then ``-1`` rows."""
    out = np.full((max_patches, 2), -1, dtype=np.int64)
    y, x = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    out[: rows * cols, 0] = x
    out[: rows * cols, 1] = y
    return out


__all__ = ["aspect_ratio_preserving_size", "position_ids"]
