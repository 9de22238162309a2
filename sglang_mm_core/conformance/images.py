"""Generated test images: deterministic pixels and a minimal PNG encoder, so the suite needs no
imaging library to feed real encoded bytes through the pipeline."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import numpy.typing as npt


def generated_image(width: int, height: int, seed: int = 0) -> npt.NDArray[np.uint8]:
    """RGB uint8 ``[height, width, 3]``: a gradient plus noise, the same for the same arguments
    (structure for resamplers to blend, noise so no two rows are alike)."""
    rng = np.random.default_rng([width, height, seed])
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack(
        [xx * 255 // max(1, width - 1), yy * 255 // max(1, height - 1), (xx + yy) % 256], axis=-1
    )
    noise = rng.integers(-24, 25, size=(height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def _chunk(tag: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(tag + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)


def encode_png(rgb: npt.NDArray[np.uint8]) -> bytes:
    """Lossless 8-bit RGB PNG (filter 0 on every row), so decoding returns ``rgb`` exactly."""
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"expected uint8 [h, w, 3], got {rgb.dtype} {rgb.shape}")
    h, w, _ = rgb.shape
    raw = np.zeros((h, 1 + 3 * w), dtype=np.uint8)
    raw[:, 1:] = rgb.reshape(h, 3 * w)
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 1))
        + _chunk(b"IEND", b"")
    )


__all__ = ["encode_png", "generated_image"]
