"""`compat.sglang.common` against the core's kernels (the same bits through both APIs) and
against the extension: equal on lossless inputs; where the extension departs from Pillow 13
(its JPEG decoder, its Pillow 12 resize pass order) ours equals Pillow."""

from __future__ import annotations

import base64
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from compat_helpers import encode, lossless, photo, pillow_rgb
from http_server import LocalHTTPServer
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_sglang import common

from sglang_mm_core import common as core
from sglang_mm_core.errors import KernelArgumentError

RGBA = np.dstack([photo(40, 56, 3), np.random.default_rng(4).integers(0, 256, (40, 56), np.uint8)])


def _exif6() -> Image.Exif:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90: the extension (and Pillow's convert) ignores it
    return exif


LOSSLESS = {
    **lossless(photo(37, 61, 1)),
    "gif": encode(np.asarray(Image.fromarray(photo(30, 40, 2)).convert("P")), "GIF"),
    "gray_png": encode(photo(33, 20, 5)[:, :, 0], "PNG"),
    "rgba_png": encode(RGBA, "PNG"),
    "rgba_webp": encode(RGBA, "WEBP", lossless=True),
    "exif_png": encode(photo(24, 32, 6), "PNG", exif=_exif6()),
}


@pytest.mark.parametrize("name", sorted(LOSSLESS))
def test_decode_equals_theirs_and_core(ext: ModuleType, name: str) -> None:
    data = LOSSLESS[name]
    h, w, flat = common.image_decode_rgb(data)
    th, tw, tflat = ext.common.image_decode_rgb(data)
    assert (h, w) == (th, tw) and flat.dtype == tflat.dtype == np.uint8 and flat.ndim == 1
    assert_array_equal(flat, tflat)
    core_arr = core.image_decode_rgb(data, alpha="drop", exif_orientation=False)
    assert_array_equal(flat.reshape(h, w, 3), core_arr)
    assert_array_equal(flat.reshape(h, w, 3), pillow_rgb(data))


def test_jpeg_decode_equals_pillow_where_theirs_does_not(ext: ModuleType) -> None:
    """The extension decodes JPEG with zune-jpeg, not libjpeg-turbo: its pixels differ from
    Pillow's. Ours are Pillow's."""
    for q, sub in ((90, 0), (75, 2)):
        data = encode(photo(120, 160, q), "JPEG", quality=q, subsampling=sub)
        h, w, flat = common.image_decode_rgb(data)
        assert_array_equal(flat.reshape(h, w, 3), pillow_rgb(data))
        th, tw, tflat = ext.common.image_decode_rgb(data)
        assert (th, tw) == (h, w) and not np.array_equal(tflat, flat)


# (out_w, out_h) from a 90 x 120 (w x h) image: up, down and mixed; then sizes that shrink
# mostly in height (h - h' > 0 and > 2 (w - w')), where Pillow 13 runs the vertical pass first
# and Pillow 12 (the extension) the horizontal one.
SIZES = [(200, 300), (45, 60), (1, 1), (90, 121), (40, 119), (20, 90)]
TALL_SHRINKS = [(80, 40), (88, 20), (60, 9), (130, 50), (300, 100)]


def vertical_first(w: int, h: int, ow: int, oh: int) -> bool:
    """Pillow 13's rule for running the vertical pass first."""
    return (h - oh) > 0 and (h - oh) > 2 * (w - ow)


def test_the_size_lists_are_what_they_say() -> None:
    assert not any(vertical_first(90, 120, ow, oh) for ow, oh in SIZES)
    assert all(vertical_first(90, 120, ow, oh) for ow, oh in TALL_SHRINKS)


PIL_FILTERS = {"pil_lanczos": Image.Resampling.LANCZOS, "pil_bicubic": Image.Resampling.BICUBIC}


@pytest.mark.parametrize("resample", ["pil_lanczos", "pil_bicubic", "aten_u8"])
def test_resize_equals_theirs_core_and_pillow(ext: ModuleType, resample: str) -> None:
    arr = photo(120, 90, 7)
    for ow, oh in SIZES:
        got = common.resize_rgb(arr, ow, oh, resample)
        assert got.ndim == 1 and got.dtype == np.uint8
        assert_array_equal(got, ext.common.resize_rgb(arr, ow, oh, resample), err_msg=str((ow, oh)))
        assert_array_equal(got.reshape(oh, ow, 3), core.resize_rgb(arr, ow, oh, resample))
        if resample in PIL_FILTERS:
            want = Image.fromarray(arr).resize((ow, oh), PIL_FILTERS[resample])
            assert_array_equal(got.reshape(oh, ow, 3), np.asarray(want))


@pytest.mark.parametrize("resample", ["pil_lanczos", "pil_bicubic"])
def test_resize_keeps_pillow13_where_theirs_keeps_pillow12(ext: ModuleType, resample: str) -> None:
    arr = photo(120, 90, 8)
    for ow, oh in TALL_SHRINKS:
        got = common.resize_rgb(arr, ow, oh, resample).reshape(oh, ow, 3)
        want = Image.fromarray(arr).resize((ow, oh), PIL_FILTERS[resample])
        assert_array_equal(got, np.asarray(want))
        theirs = ext.common.resize_rgb(arr, ow, oh, resample).reshape(oh, ow, 3)
        assert not np.array_equal(theirs, got), (ow, oh)
        assert_array_equal(theirs, core.resize_rgb(arr, ow, oh, resample, pass_order="pillow12"))


def test_resize_errors_are_value_errors(ext: ModuleType) -> None:
    arr = photo(10, 10)
    for fn in (common.resize_rgb, ext.common.resize_rgb):
        with pytest.raises(ValueError, match="pil_bilinear"):
            fn(arr, 5, 5, "pil_bilinear")
        with pytest.raises(ValueError):
            fn(arr, 0, 5)
        with pytest.raises(ValueError):
            fn(np.ascontiguousarray(arr[:, :, :2]), 5, 5)


def test_scaled_dims_equals_theirs_and_core(ext: ModuleType) -> None:
    rng = np.random.default_rng(3)
    sizes = [(1, 1), (100, 50), (50, 100), (1000, 50), (4000, 3000), (7, 3)]
    sizes += [tuple(int(v) for v in rng.integers(1, 5000, 2)) for _ in range(40)]
    for w, h in sizes:
        for frac, cap in [
            (None, None),
            (None, 100),
            (2.0, 2048),
            (2.0, None),
            (0.5, None),
            (0.37, 100),
            (1.0, 10),
            (1.5, 700),
            (3.0, 100),
        ]:
            got = common.scaled_dims(w, h, frac, cap)
            assert got == ext.common.scaled_dims(w, h, frac, cap), (w, h, frac, cap)
            assert got == ((w, h) if frac is None else core.scaled_dims(w, h, frac, cap))
    assert common.scaled_dims(300, 200, rescale_frac=2.0, rescale_cap=500) == (500, 333)


@pytest.mark.parametrize("frac", [0.0, -1.0, float("nan"), float("inf")])
def test_scaled_dims_refuses_what_theirs_turns_into_nonsense(frac: float) -> None:
    with pytest.raises(KernelArgumentError, match="rescale_frac"):
        common.scaled_dims(100, 50, frac)


def test_hash_and_base64_equal_theirs(ext: ModuleType) -> None:
    for data in (b"", b"abc", LOSSLESS["png"], bytes(range(256)) * 100):
        assert common.content_hash(data) == ext.common.content_hash(data) == core.content_hash(data)
        text = base64.b64encode(data).decode()
        assert common.base64_decode(text) == ext.common.base64_decode(text) == data
    for fn in (common.base64_decode, ext.common.base64_decode):
        with pytest.raises(ValueError):
            fn("!!!")


def test_fetch_bytes_equals_theirs(
    ext: ModuleType, tmp_path: Path, http_server: LocalHTTPServer
) -> None:
    data = LOSSLESS["png"]
    path = tmp_path / "img.png"
    path.write_bytes(data)
    url = http_server.put("img.png", data, "image/png")
    sources = [
        str(path),
        path.as_uri(),
        "data:image/png;base64," + base64.b64encode(data).decode(),
        base64.b64encode(data).decode(),
        url,
    ]
    for source in sources:
        got = common.fetch_bytes(source)
        assert type(got) is bytes and got == data == ext.common.fetch_bytes(source), source
        assert got == core.fetch_bytes(source)
    for bad in (str(tmp_path / "missing.png"), "http://127.0.0.1:1/x.png"):
        for fn in (common.fetch_bytes, ext.common.fetch_bytes):
            with pytest.raises(ValueError):
                fn(bad)


def test_decode_accepts_any_buffer() -> None:
    data = LOSSLESS["png"]
    want = common.image_decode_rgb(data)[2]
    for form in (bytearray(data), memoryview(data)):
        assert_array_equal(common.image_decode_rgb(form)[2], want)
