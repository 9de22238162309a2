"""EXIF orientation: applied first (as `ImageOps.exif_transpose`) when asked, from JPEG APP1,
PNG eXIf / raw-profile text, WebP EXIF, with Pillow's XMP fallback; malformed EXIF is ignored."""

from __future__ import annotations

import io
import zlib

import corpus
import pytest
from numpy.testing import assert_array_equal
from PIL import Image, ImageOps

from sglang_mm_core.common import image_decode_rgb, image_dimensions

PIXELS = corpus.photo("chelsea")[:48, :80]  # not square, so quarter turns show


def upright_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as im:
        return ImageOps.exif_transpose(im).size


@pytest.mark.parametrize("exif_orientation", [True, False])
@pytest.mark.parametrize("alpha", ["white", "drop"])
@pytest.mark.parametrize("orientation", range(0, 10))
@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_orientation_tags(fmt: str, orientation: int, alpha: str, exif_orientation: bool) -> None:
    data = corpus.oriented(fmt, orientation)
    out = image_decode_rgb(data, alpha=alpha, exif_orientation=exif_orientation)
    assert_array_equal(out, corpus.pillow_decode(data, alpha, exif_orientation))
    h, w = out.shape[:2]
    assert image_dimensions(data, exif_orientation=exif_orientation) == (w, h)
    if exif_orientation:
        assert image_dimensions(data) == upright_size(data)
        if orientation in (5, 6, 7, 8):
            assert (w, h) == (48, 80)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_orientation_with_alpha_band(orientation: int) -> None:
    rgba = corpus.gradient_rgba(40, 70)
    exif = b"Exif\x00\x00" + corpus.exif_tiff(orientation)
    for fmt in ("PNG", "WEBP"):
        params = {"lossless": True} if fmt == "WEBP" else {}
        data = corpus.save(rgba, fmt, exif=exif, **params)
        for alpha in ("white", "drop"):
            assert_array_equal(
                image_decode_rgb(data, alpha=alpha), corpus.pillow_decode(data, alpha)
            )


@pytest.mark.parametrize("orientation", range(1, 9))
def test_xmp_orientation_when_exif_has_none(orientation: int) -> None:
    jpeg = corpus.save(PIXELS, "JPEG")
    xmp = b"http://ns.adobe.com/xap/1.0/\x00" + corpus.xmp_packet(orientation)
    only_xmp = corpus.jpeg_with_app1(jpeg, xmp)
    both = corpus.jpeg_with_app1(only_xmp, b"Exif\x00\x00" + corpus.exif_tiff(None))
    # An EXIF orientation, when present, wins over XMP.
    exif_wins = corpus.jpeg_with_app1(only_xmp, b"Exif\x00\x00" + corpus.exif_tiff(1))
    png_xmp = corpus.png_raw(
        PIXELS,
        2,
        before_idat=(
            corpus.png_chunk(
                b"iTXt", b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + corpus.xmp_packet(orientation)
            ),
        ),
    )
    for data in (only_xmp, both, exif_wins, png_xmp):
        assert_array_equal(image_decode_rgb(data), corpus.pillow_decode(data))
        assert image_dimensions(data) == upright_size(data)


@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_png_exif_sources(orientation: int) -> None:
    tiff = corpus.exif_tiff(orientation, typ=4)
    hexed = (b"Exif\x00\x00" + tiff).hex().encode()
    text = b"\nexif\n%8d\n" % (len(tiff) + 6) + b"\n".join(
        hexed[i : i + 64] for i in range(0, len(hexed), 64)
    )
    raw_profile = corpus.png_chunk(b"zTXt", b"Raw profile type exif\x00\x00" + zlib.compress(text))
    cases = [
        corpus.png_raw(PIXELS, 2, before_idat=(raw_profile,)),
        # eXIf after the image data still counts (Pillow reads it when it loads the pixels).
        corpus.png_raw(PIXELS, 2, after_idat=(corpus.png_chunk(b"eXIf", tiff),)),
    ]
    for data in cases:
        assert_array_equal(image_decode_rgb(data), corpus.pillow_decode(data))
        assert image_dimensions(data) == upright_size(data)


def test_malformed_exif_is_ignored() -> None:
    jpeg = corpus.save(PIXELS, "JPEG")
    broken_count = bytearray(corpus.exif_tiff(6))
    broken_count[8] = 40  # IFD0 claims 40 entries
    cases = {
        "not-tiff": corpus.jpeg_with_app1(jpeg, b"Exif\x00\x00this is not a TIFF header"),
        "short": corpus.jpeg_with_app1(jpeg, b"Exif\x00\x00II*\x00"),
        "ifd-out-of-range": corpus.jpeg_with_app1(jpeg, b"Exif\x00\x00II*\x00\xff\xff\xff\x00"),
        "ifd-count": corpus.jpeg_with_app1(jpeg, b"Exif\x00\x00" + bytes(broken_count)),
        "png-not-tiff": corpus.png_raw(
            PIXELS, 2, before_idat=(corpus.png_chunk(b"eXIf", b"garbage"),)
        ),
        "png-bad-hex": corpus.png_raw(
            PIXELS,
            2,
            before_idat=(corpus.png_chunk(b"tEXt", b"Raw profile type exif\x00\nexif\n 4\nzz"),),
        ),
        "webp-not-tiff": corpus.save(PIXELS, "WEBP", exif=b"Exif\x00\x00nonsense"),
    }
    upright = corpus.pillow_decode(jpeg)
    for name, data in cases.items():
        out = image_decode_rgb(data)
        # Entries read before the data broke still count (as in Pillow's JPEG plugin); the
        # broken count case keeps its orientation 6, the others have none.
        want = corpus.pillow_decode(data) if name == "ifd-count" else upright
        if name.startswith(("png", "webp")):
            want = corpus.pillow_decode(data, exif_orientation=False)
        assert_array_equal(out, want, err_msg=name)
        assert image_dimensions(data) == (want.shape[1], want.shape[0])
