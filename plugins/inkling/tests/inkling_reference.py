"""The Inkling rules (docs/families/inkling.md) written out plainly in numpy and Pillow, as the
reference for the Rust kernel. Deliberately naive: no tables, no shared code with the plugin."""

from __future__ import annotations

import io
import math

import numpy as np
import numpy.typing as npt
from PIL import Image

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.2613026, 0.2757771], dtype=np.float32)


def scaled_size(w: int, h: int, frac: float | None, cap: int | None) -> tuple[int, int]:
    """Step 2 of the spec, in float64 with half-away-from-zero rounding."""
    if frac is None:
        return w, h
    long = max(w, h)
    if long == 0:
        return w, h
    target = long * frac
    if cap is not None:
        target = min(target, max(cap, long))
    ratio = target / long
    if ratio == 1.0:
        return w, h
    return max(1, math.floor(w * ratio + 0.5)), max(1, math.floor(h * ratio + 0.5))


def bf16_bits(x: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """float32 -> bfloat16 bits, round to nearest, ties to even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (u >> 16) & 1
    return ((u + 0x7FFF + lsb) >> 16).astype(np.uint16)


def normalise(raw: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(raw - MEAN) / STD per channel, float32 throughout (numpy does not fuse)."""
    out = (raw - MEAN) / STD
    assert out.dtype == np.float32
    return out


def patch_bits(arr: npt.NDArray[np.uint8], ps: int) -> tuple[int, int, npt.NDArray[np.uint16]]:
    """Steps 4-5 on an RGB array: ``(nph, npw, flat bits)`` in row-major patch order."""
    h, w, _ = arr.shape
    nph, npw = math.ceil(h / ps), w // ps + 1
    raw = np.full((nph * ps, npw * ps, 3), np.float32(-1 / 255), dtype=np.float32)
    raw[:h, :w] = arr.astype(np.float32) * np.float32(1 / 255)
    bits = bf16_bits(normalise(raw))
    patches = bits.reshape(nph, ps, npw, ps, 3).transpose(0, 2, 1, 3, 4)
    return nph, npw, np.ascontiguousarray(patches).reshape(-1)


def resize_image(img: Image.Image, frac: float | None, cap: int | None) -> Image.Image:
    """Step 3: Pillow's LANCZOS to the scaled size, when it differs."""
    size = scaled_size(img.width, img.height, frac, cap)
    if size != img.size:
        img = img.resize(size, Image.Resampling.LANCZOS)
    return img


def process_image(
    img: Image.Image, ps: int, frac: float | None, cap: int | None
) -> tuple[int, int, int, int, npt.NDArray[np.uint16]]:
    """``(h, w, nph, npw, bits)`` for an RGB PIL image."""
    img = resize_image(img.convert("RGB"), frac, cap)
    arr = np.asarray(img)
    nph, npw, bits = patch_bits(arr, ps)
    return img.height, img.width, nph, npw, bits


def decode_patchify(
    data: bytes, ps: int, frac: float | None, cap: int | None
) -> tuple[int, int, npt.NDArray[np.uint16]]:
    """The reference from encoded bytes: Pillow open + convert("RGB"), then the steps above."""
    with Image.open(io.BytesIO(data)) as im:
        h, w, _, _, bits = process_image(im.convert("RGB"), ps, frac, cap)
    return h, w, bits
