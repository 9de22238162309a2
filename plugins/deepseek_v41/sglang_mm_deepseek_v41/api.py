"""The family's direct API for callers that state the geometry themselves: SGLang's
``dsv41.resize_patchify`` (its compiled extension's signature, which the SGLang drop-in
serves) on the core's canvas composition, the same kernel the family's pipeline runs."""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np
import numpy.typing as npt

from sglang_mm_core import plugin as mm

from .family import GREY

PassOrder = Literal["pillow13", "pillow12"]


@functools.cache
def _features(patch_size: int, pass_order: PassOrder) -> mm.Features:
    table = mm.Table((0.5,) * 3, (0.5,) * 3, arithmetic="numpy", dtype="bfloat16")
    return mm.Features(table, mm.ChwPatches(patch_size), "pil_bicubic", pass_order)


def resize_patchify(
    image: npt.NDArray[np.uint8],
    output_size: tuple[int, int],
    resize_size: tuple[int, int],
    padding_start: tuple[int, int],
    patch_size: int,
    *,
    threads: int = 1,
    pil_pass_order: PassOrder = "pillow13",
) -> npt.NDArray[np.uint16]:
    """The bfloat16 bits, flat ``[(H / ps) * (W / ps) * 3 * ps * ps]``, of an RGB uint8
    ``[h, w, 3]`` image resized (bicubic) to ``resize_size`` ``(rh, rw)``, pasted at
    ``padding_start`` ``(top, left)`` on a grey canvas of ``output_size`` ``(H, W)``, mapped
    to ``(x / 255 - 0.5) / 0.5`` and cut into ``[n, 3, ps, ps]`` patches, row-major. A
    geometry that does not fit (the image off the canvas, a canvas that is not a multiple of
    the patch) is a `KernelArgumentError`; a resize size of 0 leaves the canvas grey, as
    Pillow's ``ImageOps.pad`` does."""
    (height, width), (rh, rw), (top, left) = output_size, resize_size, padding_start
    if patch_size < 1:
        raise mm.KernelArgumentError(f"patch_size must be positive, got {patch_size}")
    if min(height, width, rh, rw, top, left) < 0:
        raise mm.KernelArgumentError(
            f"sizes and offsets must not be negative: output {output_size}, resize "
            f"{resize_size}, padding {padding_start}"
        )
    if height % patch_size or width % patch_size or not height or not width:
        raise mm.KernelArgumentError(
            f"output {height}x{width} is not a non-empty multiple of patch_size {patch_size}"
        )
    img = mm.as_rgb(image)
    part = mm.Part.on_canvas((rw, rh), (width, height), GREY, (left, top))
    bits = _features(patch_size, pil_pass_order).compose(img, [part], threads=threads)
    return bits.reshape(-1)
