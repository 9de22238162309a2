"""The extension's ``common`` submodule: the model-agnostic kernels with its signatures and
return shapes (flat arrays, ``(h, w, data)`` tuples), on `sglang_mm_core.common`.

Decoding is the extension's: alpha dropped, no EXIF transpose (Pillow's
``Image.open(...).convert("RGB")``)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from sglang_mm_core import common as _common
from sglang_mm_core.errors import KernelArgumentError

from ._support import threads
from .errors import value_errors

Buffer = bytes | bytearray | memoryview
Resample = Literal["pil_lanczos", "pil_bicubic", "aten_u8"]
RESAMPLES: tuple[str, ...] = ("pil_lanczos", "pil_bicubic", "aten_u8")


@value_errors
def image_decode_rgb(data: Buffer) -> tuple[int, int, npt.NDArray[np.uint8]]:
    """``(h, w, pixels)``: the encoded image as flat RGB uint8 ``[h * w * 3]``."""
    arr = _common.image_decode_rgb(data, alpha="drop", exif_orientation=False)
    h, w, _ = arr.shape
    return h, w, arr.reshape(-1)


@value_errors
def resize_rgb(
    arr: npt.NDArray[np.uint8], out_w: int, out_h: int, resample: Resample = "pil_lanczos"
) -> npt.NDArray[np.uint8]:
    """An RGB uint8 ``[h, w, 3]`` array resized to flat ``[out_h * out_w * 3]``: ``pil_lanczos``
    and ``pil_bicubic`` bit-exact with Pillow 13's ``Image.resize``, ``aten_u8`` with
    torchvision's uint8 antialiased bicubic."""
    if resample not in RESAMPLES:
        raise KernelArgumentError(
            f"unknown resample {resample!r}; expected one of {', '.join(map(repr, RESAMPLES))}"
        )
    out = _common.resize_rgb(arr, out_w, out_h, resample, threads=max(1, threads()))
    return out.reshape(-1)


@value_errors
def scaled_dims(
    w: int, h: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> tuple[int, int]:
    """``(w, h)`` scaled by ``rescale_frac`` on the long edge, upscaling capped at
    ``rescale_cap``; unchanged without a fraction."""
    if rescale_frac is None:
        return w, h
    if not (math.isfinite(rescale_frac) and rescale_frac > 0):
        raise KernelArgumentError(
            f"rescale_frac must be None or a finite number > 0, got {rescale_frac!r}"
        )
    return _common.scaled_dims(w, h, rescale_frac, rescale_cap)


@value_errors
def content_hash(data: Buffer) -> int:
    """The first 8 bytes of the BLAKE3 digest of ``data``, big-endian, as an unsigned int."""
    return _common.content_hash(data)


@value_errors
def fetch_bytes(source: str) -> bytes:
    """The bytes of an ``http(s)://`` or ``file://`` URL, an absolute path, a ``data:`` URL or
    bare base64, under the core's default fetch policy and limits."""
    return _common.fetch_bytes(source)


@value_errors
def base64_decode(encoded: str) -> bytes:
    """Standard-alphabet base64 to bytes."""
    return _common.base64_decode(encoded)


__all__ = [
    "base64_decode",
    "content_hash",
    "fetch_bytes",
    "image_decode_rgb",
    "resize_rgb",
    "scaled_dims",
]
