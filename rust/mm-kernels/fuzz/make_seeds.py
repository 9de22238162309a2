"""Write the fuzzers' seed corpus (corpus/seeds/): small valid images of every format and layout
the decoders handle, and a few truncations of each, so that libFuzzer starts past the magic
bytes and the headers. Deterministic for a given Pillow; run from the repository's venv:

    .venv/bin/python rust/mm-kernels/fuzz/make_seeds.py
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image, PngImagePlugin

OUT = Path(__file__).parent / "corpus" / "seeds"
W, H = 8, 6


def pixels(channels: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (H, W, channels), dtype=np.uint8)


def save(im: Image.Image, fmt: str, **params: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


def exif(orientation: int) -> bytes:
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def adam7_gray(gray: np.ndarray) -> bytes:
    """An interlaced 8-bit gray PNG (Pillow does not write Adam7), every row filter 0."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2)]
    passes.append((0, 1, 1, 2))
    h, w = gray.shape
    raw = b"".join(
        b"\x00" + gray[y, x0::dx].tobytes()
        for x0, y0, dx, dy in passes
        if x0 < w
        for y in range(y0, h, dy)
    )
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 1)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def png16(color_type: int, channels: int, *, interlace: bool = False, trns: bytes = b"") -> bytes:
    """A 16-bit PNG (Pillow writes only 16-bit gray), Adam7 or not, every row filter 0."""
    rng = np.random.default_rng(color_type)
    samples = rng.integers(0, 65536, (H, W, channels), dtype=np.uint16)
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2)]
    passes.append((0, 1, 1, 2))
    if not interlace:
        passes = [(0, 0, 1, 1)]
    raw = b"".join(
        b"\x00" + samples[y, x0::dx].astype(">u2").tobytes()
        for x0, y0, dx, dy in passes
        if x0 < W
        for y in range(y0, H, dy)
    )
    ihdr = struct.pack(">IIBBBBB", W, H, 16, color_type, 0, 0, int(interlace))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + (chunk(b"tRNS", trns) if trns else b"")
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def rle8_bmp() -> bytes:
    """A 6x3 RLE8 BMP with a delta and an end-of-line (Pillow writes no RLE)."""
    rle = bytes([3, 5, 0, 2, 1, 1, 2, 7, 0, 0, 6, 9, 0, 1])
    palette = b"".join(bytes([i * 16, 255 - i * 16, i * 8, 0]) for i in range(16))
    header = struct.pack("<IiiHHIIiiII", 40, 6, 3, 1, 8, 1, len(rle), 2835, 2835, 16, 0)
    offset = 14 + len(header) + len(palette)
    return b"BM" + struct.pack("<IHHI", offset + len(rle), 0, 0, offset) + header + palette + rle


def valid() -> Iterator[tuple[str, bytes]]:
    rgb = Image.fromarray(pixels(3, 1))
    rgba = Image.fromarray(pixels(4, 2))
    gray = Image.fromarray(pixels(1, 3)[:, :, 0])
    pal = rgb.quantize(5)
    pal_t = pal.copy()
    pal_t.info["transparency"] = 2
    text = PngImagePlugin.PngInfo()
    text.add_text("Raw profile type exif", "\nexif\n      26\n" + exif(6).hex(), zip=True)
    xmp = PngImagePlugin.PngInfo()
    xmp.add_itxt("XML:com.adobe.xmp", '<x tiff:Orientation="8"/>', zip=True)

    yield "png-rgb", save(rgb, "PNG")
    yield "png-rgba", save(rgba, "PNG")
    yield "png-gray", save(gray, "PNG")
    yield "png-1bit", save(gray.convert("1"), "PNG")
    yield "png-la", save(rgba.convert("LA"), "PNG")
    yield "png-p-trns", save(pal_t, "PNG")
    yield "png-p-4bit", save(pal, "PNG", bits=4)
    r, g, b = np.asarray(rgb)[0, 0].tolist()
    yield "png-rgb-trns", save(rgb, "PNG", transparency=(r, g, b))
    yield "png-adam7", adam7_gray(np.asarray(gray))
    gray16 = Image.fromarray(pixels(1, 4)[:, :, 0].astype(np.uint16) * 257)  # mode I;16
    yield "png-gray16-trns", save(gray16, "PNG", transparency=0x101)
    yield "png-rgb16-trns", png16(2, 3, trns=struct.pack(">HHH", 1, 2, 3))
    yield "png-la16", png16(4, 2)
    yield "png-rgba16-adam7", png16(6, 4, interlace=True)
    yield "png-exif", save(rgb, "PNG", exif=exif(6))
    yield "png-ztxt-exif", save(rgb, "PNG", pnginfo=text)
    yield "png-itxt-xmp", save(rgb, "PNG", pnginfo=xmp)
    yield "gif-p", save(pal, "GIF")
    yield "gif-transparent", save(pal_t, "GIF", transparency=2)
    yield "gif-interlaced", save(pal, "GIF", interlace=True)
    yield "gif-gray", save(gray, "GIF")
    yield "bmp-rgb", save(rgb, "BMP")
    yield "bmp-rgba", save(rgba, "BMP")
    yield "bmp-p", save(pal, "BMP")
    yield "bmp-1bit", save(gray.convert("1"), "BMP")
    yield "bmp-rle8", rle8_bmp()
    yield "jpeg", save(rgb, "JPEG", quality=80)
    yield "jpeg-progressive-exif", save(rgb, "JPEG", progressive=True, exif=exif(5))
    yield "jpeg-gray", save(gray, "JPEG")
    yield "webp-lossless", save(rgba, "WEBP", lossless=True)
    yield "webp-lossy-exif", save(rgb, "WEBP", quality=50, exif=exif(3))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    for name, data in valid():
        (OUT / name).write_bytes(data)
        for cut in sorted({len(data) // 3, len(data) // 2, len(data) - 1}):
            (OUT / f"{name}-cut{cut}").write_bytes(data[:cut])


if __name__ == "__main__":
    main()
