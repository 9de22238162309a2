"""A PNG whose compressed data cannot fill its declared size is refused before its pixel
buffer is allocated (issue 9): Pillow fails such a file at once too."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from sglang_mm_core import _native
from sglang_mm_core.errors import DecodeError


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_declaring(width: int, height: int, idat: bytes) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )


def test_tiny_png_declaring_a_huge_image_is_refused_before_allocating() -> None:
    data = png_declaring(13000, 13000, zlib.compress(b"\x00" * 100))
    assert len(data) < 100
    with pytest.raises(Exception):  # noqa: B017 - the reference fails too
        Image.open(io.BytesIO(data)).load()
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecodeError, match="truncated") as info:
        _native.image_decode_rgb(data, max_pixels=2**40, max_side=2**20)
    assert info.value.format == "PNG"
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grew_mb < 50, f"peak RSS grew {grew_mb:.0f} MB"


def test_highly_compressed_png_still_decodes() -> None:
    # 2000x2000 black: deflate gets close to its highest ratio, and it is a valid image.
    im = Image.new("RGB", (2000, 2000))
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=9)
    out = _native.image_decode_rgb(buf.getvalue())
    assert out.shape == (2000, 2000, 3) and not out.any()
