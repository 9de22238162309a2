"""The model-agnostic kernels, with Python signatures: what a family plugin builds on. Each
call releases the GIL for its work, so threads calling them run in parallel."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from . import _native
from .fetch import fetch_bytes

Buffer = bytes | bytearray | memoryview


def image_decode_rgb(
    data: Buffer,
    *,
    alpha: Literal["white", "drop"] = "white",
    exif_orientation: bool = True,
    max_pixels: int = 178_956_970,
    max_side: int = 65_535,
) -> npt.NDArray[np.uint8]:
    """Decode JPEG, PNG, WebP, GIF (first frame) or BMP bytes to RGB uint8 ``[h, w, 3]``,
    bit-exact with Pillow. ``alpha="white"`` composites onto white as HuggingFace's
    ``convert_to_rgb``; ``"drop"`` is Pillow's ``convert("RGB")``. The pixel and side limits
    are checked from the header before any pixel is decoded (`LimitError`); anything that is
    not a supported 8-bit image is a `DecodeError`."""
    return _native.image_decode_rgb(data, alpha, exif_orientation, max_pixels, max_side)


def image_dimensions(data: Buffer, *, exif_orientation: bool = True) -> tuple[int, int]:
    """``(width, height)`` of the upright image from its header alone, for token accounting
    without decoding."""
    return _native.image_dimensions(data, exif_orientation)


def resize_rgb(
    arr: npt.NDArray[np.uint8],
    out_w: int,
    out_h: int,
    resample: Literal["pil_lanczos", "pil_bicubic", "aten_u8"] = "pil_lanczos",
    *,
    pass_order: Literal["pillow13", "pillow12"] = "pillow13",
    threads: int = 1,
) -> npt.NDArray[np.uint8]:
    """Resize a C-contiguous RGB uint8 ``[h, w, 3]`` array, bit-exact with Pillow
    (``pil_lanczos``, ``pil_bicubic``) or torchvision's antialiased uint8 bicubic
    (``aten_u8``). ``threads`` splits rows; the result does not depend on it."""
    return _native.resize_rgb(arr, out_w, out_h, resample, pass_order, threads)


def scaled_dims(w: int, h: int, frac: float, cap: int | None = None) -> tuple[int, int]:
    """Scale ``(w, h)`` by ``frac`` on the long edge (upscaling capped at ``cap``), each side
    rounded half away from zero and at least 1."""
    return _native.scaled_dims(w, h, frac, cap)


def content_hash(data: Buffer) -> int:
    """First 8 bytes of the BLAKE3 digest of the encoded bytes, big-endian, as an unsigned
    64-bit int: the same for the same bytes whatever the source form."""
    return _native.content_hash(data)


def base64_decode(data: str | Buffer) -> bytes:
    """Standard-alphabet base64 (surrounding whitespace trimmed) to bytes; bad input is a
    `DecodeError`."""
    return _native.base64_decode(data)


__all__ = [
    "base64_decode",
    "content_hash",
    "fetch_bytes",
    "image_decode_rgb",
    "image_dimensions",
    "resize_rgb",
    "scaled_dims",
]
