"""A PNG, GIF or lossy WebP whose compressed data cannot fill its declared size is refused
before its pixel buffer is allocated (issue 9), from the format's highest compression ratio:
the reference fails such a file too, and highly compressed valid files still decode. A large
lossless WebP, which has no such ratio, is refused from its first row when that fails."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
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


def gif_declaring(width: int, height: int, lzw: bytes) -> bytes:
    screen = struct.pack("<HHBBB", width, height, 0xF7, 0, 0) + bytes(768)
    frame = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x08"
    return b"GIF89a" + screen + frame + bytes([len(lzw)]) + lzw + b"\x00;"


def webp_declaring(width: int, height: int) -> bytes:
    """A valid 64x64 lossy WebP (2-3 KB) whose VP8 frame header now declares ``width x height``."""
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buf, "WEBP")
    data = bytearray(buf.getvalue())
    at = data.find(b"VP8 ") + 8 + 6  # chunk header, frame tag, start code
    data[at : at + 4] = struct.pack("<HH", width, height)
    return bytes(data)


def _refused_fast(data: bytes, fmt: str) -> str:
    with pytest.raises(Exception):  # noqa: B017 - the reference fails too
        Image.open(io.BytesIO(data)).load()
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecodeError, match="truncated") as info:
        _native.image_decode_rgb(data, max_pixels=2**40, max_side=2**20)
    assert info.value.format == fmt
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grew_mb < 50, f"peak RSS grew {grew_mb:.0f} MB"
    return str(info.value)


def test_tiny_png_declaring_a_huge_image_is_refused_before_allocating() -> None:
    data = png_declaring(13000, 13000, zlib.compress(b"\x00" * 100))
    assert len(data) < 100
    _refused_fast(data, "PNG")


def test_tiny_gif_declaring_a_huge_image_is_refused_before_allocating() -> None:
    # A clear code then an end code: Pillow refuses the incomplete frame.
    data = gif_declaring(13000, 13000, (256 | 257 << 9).to_bytes(3, "little"))
    message = _refused_fast(data, "GIF")
    assert "6 bytes left for LZW data cannot fill a 13000x13000 frame" in message, message


def test_short_lossy_webp_declaring_a_huge_image_is_refused_before_allocating() -> None:
    data = webp_declaring(8000, 8000)
    message = _refused_fast(data, "WebP")
    assert "cannot code the 250000 macroblocks of a 8000x8000 lossy frame" in message, message


def lossless_webp_declaring(width: int, height: int, alpha: bool) -> bytes:
    """A valid 64x64 lossless WebP (about 40 bytes) whose VP8L header now declares
    ``width x height``: its coded data ends long before such an image does."""
    buf = io.BytesIO()
    Image.new("RGBA" if alpha else "RGB", (64, 64), (3, 0, 0, 9)).save(buf, "WEBP", lossless=True)
    data = bytearray(buf.getvalue())
    at = data.find(b"VP8L") + 9  # chunk header, signature byte
    (word,) = struct.unpack("<I", data[at : at + 4])
    word = (width - 1) | (height - 1) << 14 | word & ~((1 << 28) - 1)
    data[at : at + 4] = struct.pack("<I", word)
    return bytes(data)


@pytest.mark.parametrize("alpha", [False, True], ids=["rgb", "rgba"])
def test_tiny_lossless_webp_declaring_a_huge_image_is_refused_from_its_first_row(
    alpha: bool,
) -> None:
    import resource

    data = lossless_webp_declaring(12999, 12999, alpha)
    with pytest.raises(Exception):  # noqa: B017 - the reference fails too
        Image.open(io.BytesIO(data)).load()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecodeError, match="VP8_STATUS_BITSTREAM_ERROR") as info:
        _native.image_decode_rgb(data)
    assert info.value.format == "WebP"
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grew_mb < 50, f"peak RSS grew {grew_mb:.0f} MB (the 507 MB buffer was allocated)"


@pytest.mark.parametrize("fmt", ["GIF", "WEBP", "WEBP-lossless"])
def test_highly_compressed_gif_and_webp_still_decode(fmt: str) -> None:
    # One colour: the encoders get close to the formats' highest ratios, and they are valid.
    im = Image.new("RGB", (4096, 4096), (200, 30, 90))
    buf = io.BytesIO()
    options = {"WEBP": {"quality": 0, "method": 6}, "WEBP-lossless": {"lossless": True}}
    im.save(buf, format=fmt.split("-")[0], **options.get(fmt, {}))
    with Image.open(io.BytesIO(buf.getvalue())) as ref:
        want = np.asarray(ref.convert("RGB"))
    out = _native.image_decode_rgb(buf.getvalue(), max_pixels=2**40)
    np.testing.assert_array_equal(out, want)


def test_highly_compressed_png_still_decodes() -> None:
    # 2000x2000 black: deflate gets close to its highest ratio, and it is a valid image.
    im = Image.new("RGB", (2000, 2000))
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=9)
    out = _native.image_decode_rgb(buf.getvalue())
    assert out.shape == (2000, 2000, 3) and not out.any()
