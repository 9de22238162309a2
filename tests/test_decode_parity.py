"""Decode parity: every corpus case decodes bit-exactly as Pillow 13 does the same steps
(open, exif_transpose, convert / composite onto white), in both alpha modes."""

from __future__ import annotations

import io
import warnings

import corpus
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from PIL import Image, ImageOps

from sglang_mm_core.common import image_decode_rgb, image_dimensions

CASES = corpus.parity_cases()


@pytest.fixture(scope="module")
def case_bytes() -> dict[str, bytes]:
    return {name: make() for name, make in CASES.items()}


def reference(data: bytes, alpha: str) -> np.ndarray:
    return corpus.pillow_decode(data, alpha)


@pytest.mark.parametrize("alpha", ["white", "drop"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pillow(case_bytes: dict[str, bytes], name: str, alpha: str) -> None:
    data = case_bytes[name]
    out = image_decode_rgb(data, alpha=alpha)
    assert out.dtype == np.uint8 and out.flags.c_contiguous
    assert_array_equal(out, reference(data, alpha))


@pytest.mark.parametrize("name", sorted(CASES))
def test_dimensions_from_the_header(case_bytes: dict[str, bytes], name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Image.open(io.BytesIO(case_bytes[name])) as im:
            stored = im.size
            upright = ImageOps.exif_transpose(im).size
    assert image_dimensions(case_bytes[name], exif_orientation=False) == stored
    assert image_dimensions(case_bytes[name]) == upright


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "GIF", "BMP"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 2000), (2000, 1), (3, 7)])
def test_extreme_shapes(fmt: str, shape: tuple[int, int]) -> None:
    h, w = shape
    pixels = corpus.noise(h, w, seed=h * 7 + w)
    image = Image.fromarray(pixels)
    data = corpus.save(image.convert("P") if fmt == "GIF" else image, fmt)
    for alpha in ("white", "drop"):
        out = image_decode_rgb(data, alpha=alpha)
        assert out.shape == (h, w, 3)
        assert_array_equal(out, reference(data, alpha))


def test_real_photographs_from_skimage() -> None:
    for name in ("astronaut", "coffee", "chelsea", "camera"):
        pixels = corpus.photo(name)
        for fmt, params in (("JPEG", {"quality": 95}), ("PNG", {}), ("WEBP", {"quality": 90})):
            data = corpus.save(pixels, fmt, **params)
            assert_array_equal(image_decode_rgb(data), reference(data, "white"))


def test_twelve_megapixel_photo() -> None:
    data = corpus.large_photo_jpeg()
    out = image_decode_rgb(data)
    assert out.shape == (3000, 4000, 3)
    assert_array_equal(out, reference(data, "white"))


def test_bytes_like_inputs() -> None:
    data = corpus.save(corpus.photo()[:32, :48], "PNG")
    want = image_decode_rgb(data)
    assert_array_equal(image_decode_rgb(bytearray(data)), want)
    assert_array_equal(image_decode_rgb(memoryview(data)), want)
    assert image_dimensions(bytearray(data)) == (48, 32)


def test_concurrent_decodes_match_sequential(case_bytes: dict[str, bytes]) -> None:
    """The GIL is released while decoding: eight threads at once give the same pixels."""
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(case_bytes)[::3]
    want = [image_decode_rgb(case_bytes[n]) for n in names]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda n: image_decode_rgb(case_bytes[n]), names * 2))
    for i, out in enumerate(got):
        assert_array_equal(out, want[i % len(names)])
