"""The model-agnostic kernels, with Python signatures: what a family plugin builds on. Each
call releases the GIL for its work, so threads calling them run in parallel. Also the values
several families share: the normalisation constants, the image limits and `as_rgb`."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _native
from ._fetch import fetch_bytes
from ._source_mode import SOURCE_MODES, SourceMode
from ._source_mode import image_source_mode as _image_source_mode
from .errors import KernelArgumentError

Buffer = bytes | bytearray | memoryview

#: Pillow's decompression-bomb threshold, the default cap on one decoded image (defined once,
#: in the Rust kernels: ``mm_kernels::limits::MAX_IMAGE_PIXELS``).
DEFAULT_MAX_PIXELS: int = _native.DEFAULT_MAX_PIXELS
#: The default cap on an image's longest side (``mm_kernels::limits::MAX_IMAGE_SIDE``).
DEFAULT_MAX_SIDE: int = _native.DEFAULT_MAX_SIDE

#: OpenAI CLIP's per-channel normalisation (HF's ``OPENAI_CLIP_MEAN`` / ``OPENAI_CLIP_STD``).
CLIP_MEAN: tuple[float, float, float] = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD: tuple[float, float, float] = (0.26862954, 0.26130258, 0.27577711)
#: HF's ``IMAGENET_STANDARD_MEAN`` / ``IMAGENET_STANDARD_STD``: values to [-1, 1].
IMAGENET_STANDARD_MEAN: tuple[float, float, float] = (0.5, 0.5, 0.5)
IMAGENET_STANDARD_STD: tuple[float, float, float] = (0.5, 0.5, 0.5)


def as_rgb(image: Any) -> npt.NDArray[np.uint8]:
    """``image`` as a C-contiguous RGB uint8 ``[h, w, 3]`` array (no copy when it already is
    one), or a `KernelArgumentError` naming what it is instead. The driver always passes such
    an array to ``process_item``; a family calls this so direct callers get the same check."""
    try:
        arr = np.asarray(image)
    except (TypeError, ValueError) as e:
        raise KernelArgumentError(
            f"expected an RGB uint8 array of shape [h, w, 3], got {type(image).__name__}: {e}"
        ) from None
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
        raise KernelArgumentError(
            f"expected an RGB uint8 array of shape [h, w, 3], got {arr.dtype} {list(arr.shape)}"
        )
    return np.ascontiguousarray(arr)


def image_decode_rgb(
    data: Buffer,
    *,
    alpha: Literal["white", "drop"] = "white",
    exif_orientation: bool = True,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_side: int = DEFAULT_MAX_SIDE,
) -> npt.NDArray[np.uint8]:
    """Decode JPEG, PNG, WebP, GIF (first frame) or BMP bytes to RGB uint8 ``[h, w, 3]``,
    bit-exact with Pillow. ``alpha="white"`` composites onto white as HuggingFace's
    ``convert_to_rgb``; ``"drop"`` is Pillow's ``convert("RGB")``. Every PNG layout Pillow
    opens is accepted, 16-bit ones converted as Pillow converts them (so they match a Pillow
    reference, not a rescale): gray ("I;16") clamped to 255, RGB, RGBA and gray + alpha cut
    to their high byte, a tRNS colour matched by its low bytes. The pixel and side limits are
    checked from the header before any pixel is decoded (`LimitError`); a format or layout
    Pillow cannot open (TIFF, 12-bit JPEG, 16-bit palette PNG, ...) is a `DecodeError`."""
    return _native.image_decode_rgb(data, alpha, exif_orientation, max_pixels, max_side)


def image_dimensions(
    data: Buffer,
    *,
    exif_orientation: bool = True,
    max_pixels: int | None = None,
    max_side: int | None = None,
) -> tuple[int, int]:
    """``(width, height)`` of the upright image from its header alone, for token accounting
    without decoding. With ``max_pixels`` or ``max_side``, an image over them is the same
    `LimitError` `image_decode_rgb` raises (one rule, in the kernels)."""
    return _native.image_dimensions(data, exif_orientation, max_pixels, max_side)


def image_source_mode(data: Buffer) -> SourceMode:
    """The mode Pillow 13 opens the image in (``"RGB"``, ``"L"``, ``"P"``, ``"RGBA"``,
    ``"LA"``, ``"CMYK"``, ``"1"``, ``"I;16"``) and whether it reads a transparency entry
    (``"transparency"`` in ``info``: a PNG's tRNS, a GIF's transparent index), from the header
    alone: a `SourceMode`, whose ``label`` is the spelling of the spec's
    ``decode.source_modes``. Bytes the decoder cannot open raise its `DecodeError`."""
    return _image_source_mode(data)


def resize_rgb(
    arr: npt.NDArray[np.uint8],
    out_w: int,
    out_h: int,
    resample: Literal[
        "pil_lanczos",
        "pil_bicubic",
        "pil_bilinear",
        "aten_u8",
        "aten_u8_bilinear",
        "aten_f32",
        "aten_f32_nofma",
    ] = "pil_lanczos",
    *,
    pass_order: Literal["pillow13", "pillow12"] = "pillow13",
    threads: int = 1,
) -> npt.NDArray[np.uint8]:
    """Resize a C-contiguous RGB uint8 ``[h, w, 3]`` array, bit-exact with Pillow 13's
    ``Image.resize`` (``pil_lanczos``, ``pil_bicubic``, ``pil_bilinear``; ``pass_order``
    ``pillow12`` reproduces older Pillow) or torchvision's antialiased uint8 resize
    (``aten_u8`` bicubic, ``aten_u8_bilinear``), or torchvision's v1 ``functional.resize`` of a
    uint8 tensor, bicubic with antialias, which resizes in float32 and rounds back
    (``aten_f32``: aten's AVX2 build, with its fused multiply-adds; ``aten_f32_nofma``: its
    portable build). ``threads`` splits rows; the result does not depend on it."""
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
    "CLIP_MEAN",
    "CLIP_STD",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MAX_SIDE",
    "IMAGENET_STANDARD_MEAN",
    "IMAGENET_STANDARD_STD",
    "SOURCE_MODES",
    "SourceMode",
    "as_rgb",
    "base64_decode",
    "content_hash",
    "fetch_bytes",
    "image_decode_rgb",
    "image_dimensions",
    "image_source_mode",
    "resize_rgb",
    "scaled_dims",
]
