"""Bad input: a typed error naming the cause, never a crash, a hang or a partial result; limits
refused from the header before any pixel is decoded."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import textwrap
import zlib

import corpus
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from PIL import UnidentifiedImageError

from sglang_mm_core.common import image_decode_rgb, image_dimensions
from sglang_mm_core.errors import DecodeError, KernelArgumentError, LimitError

BAD = corpus.bad_inputs()
FORMATS = {"bmp": "BMP", "gif": "GIF", "jpeg": "JPEG", "png": "PNG", "webp": "WebP"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_inputs_raise_decode_error(name: str) -> None:
    with pytest.raises(DecodeError) as err:
        image_decode_rgb(BAD[name])
    msg = str(err.value)
    fmt = FORMATS.get(name.split("-")[0])
    if fmt is not None:
        assert f"cannot decode {fmt} image" in msg, msg
    if name in ("empty",):
        assert "empty" in msg
    elif name in ("random", "text"):
        assert "unknown format" in msg
    elif name == "tiff":
        assert "TIFF" in msg
    elif "truncated" in name or name.endswith("-only"):
        assert "truncated" in msg, msg
    elif name == "png-bad-crc":
        assert "checksum" in msg
    else:
        raise AssertionError(f"no expected message for bad input {name!r}: {msg}")


# What Pillow's message says went wrong -> what ours must say (a regex), and whether ours may
# call the file truncated.
PILLOW_FAILURE_KINDS = (
    ("truncated", "truncated", True),
    # The file ends before the scan, so Pillow has no tile to decode.
    ("cannot load this image", "no image data", True),
    # libwebp refuses the container (cut or invalid: it does not tell).
    ("could not create decoder object", "could not create decoder object", True),
    # The codec refuses the layout the header asks for.
    ("codec configuration error", "configuration error", False),
    # The codec met data it cannot decode (IMAGING_CODEC_BROKEN).
    ("unrecognized data stream contents", "unknown filter type|broken data stream", False),
)


def assert_fails_like_pillow(data: bytes, fmt: str, pillow_error: Exception, alpha: str) -> None:
    """Pillow raised `pillow_error` on `data`; we must raise a DecodeError of the same kind.

    Pillow "cannot identify" a file when no plugin can read its header: then our header probe
    must fail too. Any other Pillow error comes from reading the image: our message must name
    the format and say what Pillow's says (a truncation is a truncation, a broken stream or a
    refused layout is no truncation)."""
    with pytest.raises(DecodeError) as err:
        image_decode_rgb(data, alpha=alpha)
    msg = str(err.value)
    if isinstance(pillow_error, UnidentifiedImageError):
        assert err.value.unsupported or err.value.format == fmt, msg
        assert msg.startswith(("unsupported image format", f"cannot decode {fmt} image")), msg
        with pytest.raises(DecodeError):
            image_dimensions(data)
        return
    assert (err.value.format, err.value.unsupported) == (fmt, False), msg
    assert msg.startswith(f"cannot decode {fmt} image"), msg
    pillow_msg = str(pillow_error).lower()
    for pillow_says, we_say, truncation_ok in PILLOW_FAILURE_KINDS:
        if pillow_says in pillow_msg:
            assert re.search(we_say, msg), f"Pillow: {pillow_error!r}; ours: {msg}"
            assert truncation_ok or "truncated" not in msg, f"Pillow: {pillow_error!r}; ours: {msg}"
            return
    raise AssertionError(f"no expected kind for Pillow's {pillow_error!r} (ours: {msg})")


@pytest.mark.parametrize(
    "fmt,params",
    [
        ("JPEG", {}),
        ("JPEG", {"progressive": True}),
        ("PNG", {}),
        ("GIF", {}),
        ("BMP", {}),
        ("WEBP", {"lossless": True}),
        ("WEBP", {"quality": 80}),
    ],
)
def test_every_truncation_errors_or_matches_pillow(fmt: str, params: dict[str, object]) -> None:
    """Cut anywhere: Pillow raises (and so must we, with a DecodeError of the same kind), or it
    decodes (a missing trailer is tolerated) and we give the same pixels."""
    image = corpus.Image.fromarray(corpus.photo("astronaut")[:48, :64])
    data = corpus.save(image.convert("P") if fmt == "GIF" else image, fmt, **params)
    for cut, prefix in corpus.truncations(data):
        try:
            want = corpus.pillow_decode(prefix)
        except Exception as pillow_error:
            assert_fails_like_pillow(prefix, FORMATS[fmt.lower()], pillow_error, "white")
            continue
        assert_array_equal(image_decode_rgb(prefix), want, err_msg=f"cut at {cut}")


@pytest.mark.parametrize("name", sorted(corpus.edge_cases()))
def test_edge_cases_match_pillow_or_fail_like_it(name: str) -> None:
    data = corpus.edge_cases()[name]
    for alpha in ("white", "drop"):
        try:
            want = corpus.pillow_decode(data, alpha)
        except Exception as pillow_error:
            assert_fails_like_pillow(data, FORMATS[name.split("-")[0]], pillow_error, alpha)
            continue
        assert_array_equal(image_decode_rgb(data, alpha=alpha), want)


def test_twelve_bit_jpeg_is_rejected() -> None:
    jpeg = bytearray(corpus.save(corpus.photo()[:16, :16], "JPEG"))
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 4] = 12
    with pytest.raises(DecodeError, match="12-bit"):
        image_decode_rgb(bytes(jpeg))


def bomb_png(width: int, height: int) -> bytes:
    """A few hundred bytes declaring a huge gray image (one row of real data)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = zlib.compress(b"\x00" * (width + 1), 9)
    return (
        b"\x89PNG\r\n\x1a\n"
        + corpus.png_chunk(b"IHDR", ihdr)
        + corpus.png_chunk(b"IDAT", body)
        + corpus.png_chunk(b"IEND", b"")
    )


def test_decompression_bomb_refused_from_the_header() -> None:
    data = bomb_png(20000, 20000)
    assert len(data) < 1000
    with pytest.raises(LimitError) as err:
        image_decode_rgb(data)
    assert "20000x20000" in str(err.value) and "178956970" in str(err.value)
    # The header probe still answers (token accounting never decodes).
    assert image_dimensions(data) == (20000, 20000)


def test_bomb_keeps_memory_flat() -> None:
    """In a fresh process: refusing a 20000x20000 PNG (1.2 GB of RGB) must not grow the peak
    resident set by more than a few MB."""
    script = textwrap.dedent(
        f"""
        import resource, sys
        sys.path.insert(0, {str(corpus.Path(__file__).parent)!r})
        from test_decode_errors import bomb_png
        from sglang_mm_core.common import image_decode_rgb
        from sglang_mm_core.errors import LimitError
        import corpus
        image_decode_rgb(corpus.save(corpus.photo()[:64, :64], "PNG"))  # warm up
        data = bomb_png(20000, 20000)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            image_decode_rgb(data)
        except LimitError:
            pass
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(after - before)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) < 16 * 1024  # KiB


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "GIF", "BMP"])
def test_limits_name_dimensions_and_limit(fmt: str) -> None:
    pixels = corpus.noise(30, 40, seed=1)
    image = corpus.Image.fromarray(pixels)
    data = corpus.save(image.convert("P") if fmt == "GIF" else image, fmt)
    with pytest.raises(LimitError, match=r"40x30.*1199"):
        image_decode_rgb(data, max_pixels=1199)
    with pytest.raises(LimitError, match=r"40x30.*39"):
        image_decode_rgb(data, max_side=39)
    assert image_decode_rgb(data, max_pixels=1200, max_side=40).shape == (30, 40, 3)


def test_unknown_alpha_mode_is_an_argument_error() -> None:
    data = corpus.save(corpus.photo()[:8, :8], "PNG")
    with pytest.raises(KernelArgumentError, match="alpha"):
        image_decode_rgb(data, alpha="black")


def test_probe_rejects_what_decode_rejects() -> None:
    for name in (
        "empty",
        "random",
        "jpeg-header-only",
        "png-signature-only",
        "gif-header-only",
        "tiff",
    ):
        with pytest.raises(DecodeError):
            image_dimensions(BAD[name])


def test_random_bytes_after_valid_headers() -> None:
    """Valid magic and header, garbage after: DecodeError (or Pillow's pixels), never a crash."""
    rng = np.random.default_rng(3)
    for fmt in ("JPEG", "PNG", "GIF", "BMP", "WEBP"):
        image = corpus.Image.fromarray(corpus.photo()[:32, :32])
        data = corpus.save(image.convert("P") if fmt == "GIF" else image, fmt)
        for keep in (16, 40, 100):
            junk = data[:keep] + rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()
            try:
                want = corpus.pillow_decode(junk)
            except Exception:
                with pytest.raises((DecodeError, LimitError)):
                    image_decode_rgb(junk)
                continue
            assert_array_equal(image_decode_rgb(junk), want)
