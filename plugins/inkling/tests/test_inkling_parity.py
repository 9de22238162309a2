"""Bit-exact parity of the Rust kernel with the numpy + Pillow reference of the spec, on real
photographs and on generated sizes and parameter combinations."""

from __future__ import annotations

import numpy as np
import pytest
from blake3 import blake3
from inkling_corpus import encode
from inkling_reference import decode_patchify as ref_decode_patchify
from inkling_reference import patch_bits, process_image
from numpy.testing import assert_array_equal
from PIL import Image
from sglang_mm_inkling import (
    InklingFamily,
    InklingParams,
    decode_patchify,
    decode_patchify_batch,
    patchify_rgb,
    preprocess_images,
)

# (frac, cap): none, the default, down- and upscaling, caps below and above the long edge.
RESCALES = [
    (None, None),
    (2.0, 2048),
    (2.0, None),
    (0.5, None),
    (0.37, None),
    (1.0, None),
    (1.5, 700),  # cap between long edge and long * frac for the photos
    (3.0, 100),  # cap below the long edge: never shrinks
]


def _family(ps: int, frac: float | None, cap: int | None, t: int = 2) -> InklingFamily:
    return InklingFamily(
        InklingParams(
            patch_size=ps,
            rescale_image_frac=frac,
            rescale_image_max_upscaled_long_edge=cap,
            temporal_patch_size=t,
        )
    )


def _check_item(arr: np.ndarray, ps: int, frac: float | None, cap: int | None) -> None:
    h, w, nph, npw, want = process_image(Image.fromarray(arr), ps, frac, cap)
    item = _family(ps, frac, cap).process_item(arr)
    assert item.geometry.height == h and item.geometry.width == w
    assert item.geometry.grid == (nph, npw)
    assert item.feature.shape == (nph * npw, 2, ps, ps, 3)
    feat = item.feature.array
    assert_array_equal(feat[:, 0].reshape(-1), want)
    assert_array_equal(feat[:, 1].reshape(-1), want)
    assert item.aux["num_patches"].array.tolist() == [nph * npw]
    compact = _family(ps, frac, cap).process_item(arr, compact=True)
    full = compact.feature.expand()
    assert full.dtype == "bfloat16" and full.shape == item.feature.shape
    assert_array_equal(full.array[:, 0].reshape(-1), want)
    assert_array_equal(full.array[:, 1].reshape(-1), want)
    assert compact.geometry == item.geometry


@pytest.mark.parametrize("frac,cap", RESCALES)
@pytest.mark.parametrize("name", ["astronaut", "coffee", "chelsea"])
def test_photos_process_item(photos: dict, name: str, frac: float | None, cap: int | None) -> None:
    _check_item(photos[name], 40, frac, cap)


@pytest.mark.parametrize("ps", [14, 16, 40])
@pytest.mark.parametrize("name", ["rocket", "camera"])
def test_photos_patch_sizes(photos: dict, name: str, ps: int) -> None:
    _check_item(photos[name], ps, 2.0, 2048)


SIZES = [(1, 1), (40, 40), (80, 40), (39, 41), (41, 39), (123, 77), (1, 97), (97, 1), (200, 3)]


@pytest.mark.parametrize("frac,cap", [(None, None), (2.0, 2048), (0.5, None), (2.5, 150)])
@pytest.mark.parametrize("w,h", SIZES)
def test_generated_sizes(w: int, h: int, frac: float | None, cap: int | None) -> None:
    rng = np.random.default_rng(w * 1000 + h)
    arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    _check_item(arr, 40, frac, cap)


@pytest.mark.parametrize("w", [80, 81, 119, 120])
def test_pad_column_when_width_is_a_multiple(w: int) -> None:
    arr = np.full((40, w, 3), 200, dtype=np.uint8)
    bits = patchify_rgb(arr, 40).reshape(-1, 40, 40, 3)
    assert len(bits) == w // 40 + 1
    nph, npw, want = patch_bits(arr, 40)
    assert (nph, npw) == (1, w // 40 + 1)
    assert_array_equal(bits.reshape(-1), want)


def test_patchify_rgb_photo(photos: dict) -> None:
    arr = photos["coffee"]
    assert_array_equal(patchify_rgb(arr, 40), patch_bits(arr, 40)[2])
    assert_array_equal(patchify_rgb(arr, 40, threads=0), patch_bits(arr, 40)[2])


def _hash(data: bytes) -> int:
    return int.from_bytes(blake3(data).digest()[:8], "big")


@pytest.mark.parametrize("frac,cap", [(None, None), (2.0, 2048), (0.5, None), (1.5, 700)])
def test_bytes_api_matches_reference(
    photo_jpegs: dict, frac: float | None, cap: int | None
) -> None:
    datas = list(photo_jpegs.values())
    want = [ref_decode_patchify(d, 40, frac, cap) for d in datas]
    for d, (h, w, bits) in zip(datas, want, strict=True):
        gh, gw, gbits = decode_patchify(d, 40, frac, cap)
        assert (gh, gw) == (h, w)
        assert_array_equal(gbits, bits)
    for threads in (1, 2):
        batch = decode_patchify_batch(datas, 40, frac, cap, threads=threads)
        assert [(h, w) for h, w, _ in batch] == [(h, w) for h, w, _ in want]
        for (_, _, got), (_, _, ref) in zip(batch, want, strict=True):
            assert_array_equal(got, ref)
    pre = preprocess_images(datas, 40, frac, cap)
    for d, (h, w, bits, hsh), (rh, rw, rbits) in zip(datas, pre, want, strict=True):
        assert (h, w) == (rh, rw)
        assert hsh == _hash(d)
        assert_array_equal(bits, rbits)


def test_png_and_positional_arguments(photo_pngs: dict) -> None:
    data = photo_pngs["chelsea"]
    h, w, bits = decode_patchify(data, 16, 2.0, 1000)
    rh, rw, rbits = ref_decode_patchify(data, 16, 2.0, 1000)
    assert (h, w) == (rh, rw) == (600, 902)  # 451x300 doubled: 902 stays under the cap
    assert_array_equal(bits, rbits)


def test_rgba_png_drops_alpha() -> None:
    rng = np.random.default_rng(3)
    rgba = rng.integers(0, 256, (45, 61, 4), dtype=np.uint8)
    data = encode(rgba, "PNG")
    h, w, bits = decode_patchify(data, 20, 2.0, 2048)
    rh, rw, rbits = ref_decode_patchify(data, 20, 2.0, 2048)
    assert (h, w) == (rh, rw)
    assert_array_equal(bits, rbits)
