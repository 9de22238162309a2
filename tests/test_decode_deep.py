"""Deep and unusual PNG layouts decode as Pillow 13 opens and converts them: 16-bit gray ("I;16",
clamped to 255 on conversion), 16-bit RGB / RGBA / gray + alpha (the high byte of each sample),
tRNS on 16-bit gray and RGB (matched by its low bytes), 1/2/4-bit gray and palettes, 8-bit gray
with tRNS. Pillow writes what it can (I;16, "1", 1/2-bit palettes, L with tRNS); the rest comes
from the hand-written PNG encoder in `corpus.png_raw` (zlib + struct, every row filter).

The references are the ones every decode test uses: ``alpha="drop"`` is
``Image.open(...).convert("RGB")``; ``alpha="white"`` is `corpus.pillow_decode`, the project's
rule (an image with an alpha band or a transparency entry goes through ``convert("RGBA")`` and
``Image.alpha_composite`` onto opaque white, any other image through ``convert("RGB")``)."""

from __future__ import annotations

import functools
import io
import struct
import warnings
import zlib

import corpus
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from PIL import Image, UnidentifiedImageError

from sglang_mm_core.common import image_decode_rgb, image_dimensions
from sglang_mm_core.errors import DecodeError, LimitError

# Values either side of every boundary the reductions have: the I;16 clamp at 256, the high
# byte (0x00ff vs 0x0100, 0xff00), the extremes.
EDGE16 = (0, 1, 127, 128, 255, 256, 257, 511, 0x0100, 0x7FFF, 0x8000, 0xFF00, 0xFFFE, 65535)
SIZE = (11, 13)  # (h, w): odd, so sub-byte rows end mid-byte and Adam7 passes are uneven
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def deep(h: int, w: int, channels: int, seed: int) -> np.ndarray:
    """16-bit samples: the edge values first, then a row of values below 300 (uniform 16-bit
    noise is almost never under 256, where "I;16" is not clamped), the rest uniform noise."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 65536, (h, w, channels), dtype=np.uint16)
    flat = s.reshape(-1)
    n = min(len(flat), len(EDGE16) * channels)
    flat[:n] = np.repeat(EDGE16, channels)[:n]
    if h > 2:
        s[2] = rng.integers(0, 300, (w, channels), dtype=np.uint16)
    return s[..., 0] if channels == 1 else s


def be16(*values: int) -> bytes:
    return b"".join(struct.pack(">H", v) for v in values)


def pillow_writes(image: Image.Image, **params: object) -> bytes:
    return corpus.save(image, "PNG", **params)


@functools.cache
def cases() -> dict[str, tuple[bytes, str]]:
    """name -> (PNG bytes, the mode Pillow opens it in)."""
    h, w = SIZE
    out: dict[str, tuple[bytes, str]] = {}
    modes16 = {0: "I;16", 2: "RGB", 4: "RGBA", 6: "RGBA"}
    names16 = {0: "gray16", 2: "rgb16", 4: "la16", 6: "rgba16"}
    for color_type, mode in modes16.items():
        s = deep(h, w, CHANNELS[color_type], seed=color_type)
        name = names16[color_type]
        out[name] = (corpus.png_raw(s, color_type, 16), mode)
        out[f"{name}-adam7"] = (corpus.png_raw(s, color_type, 16, interlace=True), mode)
        for ih, iw in ((1, 1), (2, 3), (9, 7)):
            tiny = deep(ih, iw, CHANNELS[color_type], seed=ih)
            out[f"{name}-adam7-{iw}x{ih}"] = (
                corpus.png_raw(tiny, color_type, 16, interlace=True),
                mode,
            )
        out[f"{name}-idat-split"] = (corpus.png_raw(s, color_type, 16, idat_parts=5), mode)

    gray = deep(h, w, 1, seed=10)
    out["gray16-pillow"] = (pillow_writes(Image.fromarray(gray)), "I;16")
    # tRNS on I;16: 256 and 257 have the low byte of 0 and 1; 65535 that of every clamped value.
    for t in (0, 1, 255, 256, 257, 65535, int(gray[2, 3])):
        out[f"gray16-trns-{t}"] = (corpus.png_raw(gray, 0, 16, trns=be16(t)), "I;16")
    out["gray16-trns-adam7"] = (corpus.png_raw(gray, 0, 16, trns=be16(256), interlace=True), "I;16")

    rgb = deep(h, w, 3, seed=11)
    rgb[0, 1] = (0x1234, 0x5678, 0x9ABC)
    rgb[0, 2] = (0x12FF, 0x5600, 0x9A9A)  # same high bytes, other low bytes
    rgb[0, 3] = (0x3412, 0x7856, 0xBC9A)  # high bytes equal the first one's low bytes
    rgb_trns = {
        "exact": (0x1234, 0x5678, 0x9ABC),
        "low-bytes": (0x0012, 0x0056, 0x009A),
        "other-high-byte": (0xFF34, 0x0078, 0x01BC),
        "absent": (0x0001, 0x0002, 0x0003),
    }
    for label, t in rgb_trns.items():
        out[f"rgb16-trns-{label}"] = (corpus.png_raw(rgb, 2, 16, trns=be16(*t)), "RGB")
    trns = be16(*rgb_trns["exact"])
    out["rgb16-trns-adam7"] = (corpus.png_raw(rgb, 2, 16, trns=trns, interlace=True), "RGB")
    # An alpha band and a tRNS chunk: Pillow ignores the tRNS, and so must we.
    la = deep(h, w, 2, seed=12)
    out["la16-ignored-trns"] = (corpus.png_raw(la, 4, 16, trns=be16(0)), "RGBA")

    # 1/2/4-bit gray ("1" and "L", 2 and 4 bits scaled by 0x55 / 0x11), with and without tRNS;
    # Pillow compares a 2/4-bit tRNS value with the scaled sample, so both spellings are here.
    rng = np.random.default_rng(20)
    for depth, mode, trns_values in ((1, "1", (0, 1)), (2, "L", (1, 0x55)), (4, "L", (3, 0x33))):
        g = rng.integers(0, 1 << depth, (h, w), dtype=np.uint8)
        out[f"gray{depth}"] = (corpus.png_raw(g, 0, depth), mode)
        out[f"gray{depth}-adam7"] = (corpus.png_raw(g, 0, depth, interlace=True), mode)
        for t in trns_values:
            out[f"gray{depth}-trns-{t}"] = (corpus.png_raw(g, 0, depth, trns=be16(t)), mode)
    bits = rng.integers(0, 2, (h, w), dtype=np.uint8) * 255
    out["gray1-pillow"] = (pillow_writes(Image.fromarray(bits).convert("1")), "1")

    # 8-bit gray with tRNS: the value itself, one whose low byte matches (256 -> 0), 0x0107.
    g8 = rng.integers(0, 256, (h, w), dtype=np.uint8)
    g8[0, :3] = (0, 7, 255)
    for t in (0, 7, 255, 256, 0x0107):
        out[f"gray8-trns-{t}"] = (corpus.png_raw(g8, 0, 8, trns=be16(t)), "L")
    out["gray8-trns-pillow"] = (pillow_writes(Image.fromarray(g8), transparency=7), "L")

    # Palettes at 1/2/4/8 bits: none, a per-entry alpha table (0 and 255 included, shorter than
    # the palette), the one-zero "simple" table, and Adam7.
    for depth in (1, 2, 4, 8):
        entries = min(1 << depth, 40)
        idx = rng.integers(0, entries, (h, w), dtype=np.uint8)
        palette = rng.integers(0, 256, (entries, 3), dtype=np.uint8)
        alphas = rng.integers(0, 256, max(1, entries - 1), dtype=np.uint8)
        alphas[0] = 0
        alphas[-1] = 255
        simple = bytes([255] * (entries - 1) + [0])
        out[f"p{depth}"] = (corpus.png_raw(idx, 3, depth, palette=palette), "P")
        out[f"p{depth}-trns"] = (
            corpus.png_raw(idx, 3, depth, palette=palette, trns=alphas.tobytes()),
            "P",
        )
        out[f"p{depth}-trns-simple"] = (
            corpus.png_raw(idx, 3, depth, palette=palette, trns=simple),
            "P",
        )
        out[f"p{depth}-trns-adam7"] = (
            corpus.png_raw(idx, 3, depth, palette=palette, trns=alphas.tobytes(), interlace=True),
            "P",
        )
    for depth, colours in ((1, 2), (2, 4)):
        im = Image.fromarray(rng.integers(0, colours, (h, w), dtype=np.uint8), "P")
        im.putpalette(rng.integers(0, 256, colours * 3, dtype=np.uint8).tobytes())
        out[f"p{depth}-pillow"] = (pillow_writes(im, bits=depth), "P")
        out[f"p{depth}-pillow-trns"] = (pillow_writes(im, bits=depth, transparency=1), "P")
    return out


def assert_matches_pillow(data: bytes, mode: str) -> None:
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == mode
        size = im.size
    with warnings.catch_warnings():
        # "Palette images with Transparency expressed in bytes...": convert("RGB") ignores it.
        warnings.simplefilter("ignore", UserWarning)
        drop = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    white = corpus.pillow_decode(data, "white", exif_orientation=False)
    assert_array_equal(image_decode_rgb(data, alpha="drop", exif_orientation=False), drop)
    assert_array_equal(image_decode_rgb(data, alpha="white", exif_orientation=False), white)
    # With orientation on (no EXIF here) and the default alpha: the same pixels.
    assert_array_equal(image_decode_rgb(data), corpus.pillow_decode(data, "white"))
    assert image_dimensions(data) == size


@pytest.mark.parametrize("name", sorted(cases()))
def test_deep_and_unusual_png_matches_pillow(name: str) -> None:
    data, mode = cases()[name]
    assert_matches_pillow(data, mode)


@pytest.mark.parametrize("name", ["gray16-trns-256", "rgb16-adam7", "rgba16", "la16-adam7"])
def test_truncated_deep_files_fail_or_match_like_pillow(name: str) -> None:
    """Cut anywhere: where Pillow raises we raise a PNG DecodeError; where it decodes (the
    zlib stream ends early, the rows left zero) we give its pixels."""
    data, _ = cases()[name]
    for cut, prefix in corpus.truncations(data):
        try:
            want = corpus.pillow_decode(prefix, "white")
        except Exception:
            with pytest.raises(DecodeError):
                image_decode_rgb(prefix)
            continue
        assert_array_equal(image_decode_rgb(prefix), want, err_msg=f"cut at {cut}")


def test_pillow_13_reductions_are_the_ones_reproduced() -> None:
    """The installed Pillow's own behaviour, stated once: if a release changes it, this names
    which rule moved (the parity tests above would only say the pixels differ)."""
    v = np.array([[0, 1, 255, 256, 257, 0x1234, 0xFF00, 65535]], np.uint16)
    clamped = np.minimum(v, 255).astype(np.uint8)
    with Image.open(io.BytesIO(corpus.png_raw(v, 0, 16))) as im:
        assert im.mode == "I;16"
        assert_array_equal(np.asarray(im), v)  # the full 16 bits are kept ...
        # ... and every conversion to 8 bits clamps (I16_L / I16_RGB), not the high byte.
        assert_array_equal(np.asarray(im.convert("L")), clamped)
        assert_array_equal(np.asarray(im.convert("RGB")), np.dstack([clamped] * 3))
        assert_array_equal(np.asarray(im.convert("RGBA"))[..., 3], np.full_like(clamped, 255))
    rgba = deep(3, 5, 4, seed=1)
    for color_type, mode, samples, want in (
        (2, "RGB", rgba[..., :3], rgba[..., :3] >> 8),
        (6, "RGBA", rgba, rgba >> 8),
        (4, "RGBA", rgba[..., [0, 3]], rgba[..., [0, 0, 0, 3]] >> 8),
    ):
        with Image.open(io.BytesIO(corpus.png_raw(samples, color_type, 16))) as im:
            assert im.mode == mode
            assert_array_equal(np.asarray(im), want.astype(np.uint8))  # the high byte
    # tRNS: the low byte of the stored value against the pixel as converted to 8 bits.
    with Image.open(io.BytesIO(corpus.png_raw(v, 0, 16, trns=be16(256)))) as im:
        assert im.info["transparency"] == 256
        alpha = np.asarray(im.convert("RGBA"))[..., 3]
        assert_array_equal(alpha, np.where(clamped == 0, 0, 255).astype(np.uint8))
    px = np.array([[[0x1234, 0x5678, 0x9ABC], [0x3412, 0x7856, 0xBC9A]]], np.uint16)
    with Image.open(io.BytesIO(corpus.png_raw(px, 2, 16, trns=be16(0x1234, 0x5678, 0x9ABC)))) as im:
        assert_array_equal(np.asarray(im.convert("RGBA"))[0, :, 3], [255, 0])


def test_every_png_mode_converts_to_rgba_in_pillow() -> None:
    """The white-alpha reference goes through ``convert("RGBA")``; Pillow does that for every
    mode a PNG opens in, so no layout needs the decoder's refusal of a mode it cannot convert."""
    modes = set()
    for data, mode in cases().values():
        with Image.open(io.BytesIO(data)) as im:
            assert im.convert("RGBA").mode == "RGBA"
            modes.add(mode)
    assert modes == {"1", "L", "P", "I;16", "RGB", "RGBA"}


@pytest.mark.parametrize("depth,color_type", [(16, 3), (2, 2), (4, 4), (1, 6), (32, 0), (8, 5)])
def test_layouts_pillow_has_no_mode_for_are_named(depth: int, color_type: int) -> None:
    ihdr = struct.pack(">IIBBBBB", 2, 2, depth, color_type, 0, 0, 0)
    data = (
        b"\x89PNG\r\n\x1a\n"
        + corpus.png_chunk(b"IHDR", ihdr)
        + corpus.png_chunk(b"IDAT", zlib.compress(bytes(64)))
        + corpus.png_chunk(b"IEND", b"")
    )
    with pytest.raises(UnidentifiedImageError):
        Image.open(io.BytesIO(data))
    for call in (image_decode_rgb, image_dimensions):
        with pytest.raises(DecodeError, match=f"bit depth {depth} with colour type {color_type}"):
            call(data)


DEEP = sorted(n for n in cases() if "16" in n and "adam7-" not in n)


@pytest.mark.parametrize("name", DEEP)
def test_limits_refuse_deep_files_from_the_header(name: str) -> None:
    data, _ = cases()[name]
    w, h = image_dimensions(data)
    assert image_dimensions(data, max_pixels=w * h, max_side=max(w, h)) == (w, h)
    refusals = (
        ("max_image_pixels", lambda: image_decode_rgb(data, max_pixels=w * h - 1)),
        ("max_image_pixels", lambda: image_dimensions(data, max_pixels=w * h - 1)),
        ("max_image_side", lambda: image_decode_rgb(data, max_side=max(w, h) - 1)),
        ("max_image_side", lambda: image_dimensions(data, max_side=max(w, h) - 1)),
    )
    for limit, call in refusals:
        with pytest.raises(LimitError) as err:
            call()
        assert err.value.limit == limit


@pytest.mark.parametrize("color_type", [0, 2, 4, 6])
def test_deep_bomb_is_a_limit_error_before_any_pixel(color_type: int) -> None:
    """20000x20000 declared over a few bytes of image data: the default pixel limit refuses it
    from the header (the same LimitError for the probe), without inflating anything."""
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 16, color_type, 0, 0, 0)
    data = (
        b"\x89PNG\r\n\x1a\n"
        + corpus.png_chunk(b"IHDR", ihdr)
        + corpus.png_chunk(b"IDAT", zlib.compress(bytes(1000)))
        + corpus.png_chunk(b"IEND", b"")
    )
    with pytest.raises(LimitError) as err:
        image_decode_rgb(data)
    assert err.value.limit == "max_image_pixels"
    assert image_dimensions(data) == (20000, 20000)
    with pytest.raises(LimitError):
        image_dimensions(data, max_pixels=178956970)


def test_deep_png_exif_orientation() -> None:
    rgba = deep(5, 8, 4, seed=3)
    exif = corpus.png_chunk(b"eXIf", corpus.exif_tiff(6))
    data = corpus.png_raw(rgba, 6, 16, before_idat=(exif,))
    assert image_dimensions(data) == (5, 8)
    assert image_dimensions(data, exif_orientation=False) == (8, 5)
    for alpha in ("white", "drop"):
        assert_array_equal(image_decode_rgb(data, alpha=alpha), corpus.pillow_decode(data, alpha))
